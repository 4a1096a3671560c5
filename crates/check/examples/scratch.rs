use ringleader_check::*;
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let algo = &args[1];
    let n: u32 = args[2].parse().unwrap();
    let mut b = Bounds::new(n);
    if let Some(k) = args.get(3) {
        b.network = k.parse().unwrap();
    }
    if let Some(c) = args.get(4) {
        b.crashes = c.parse().unwrap();
    }
    let o = check(algo, b, &Options::default()).unwrap();
    println!("{} states {} unique {} depth {} {:.2}s", algo, o.states, o.unique_states, o.depth, o.seconds);
    for p in &o.properties {
        println!("  {} {} holds={} len={:?} {:?}", p.name, p.kind, p.holds, p.length, p.detail);
        if p.violated() {
            for s in &p.steps {
                println!("     {s}");
            }
        }
    }
}
