//! `ringleader check`: exhaustive model checking for small N, breadth-first (shortest
//! counterexamples) or depth-first (the largest spaces), with symmetry reduction where it applies.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::path::PathBuf;

use anyhow::{Context as _, bail};
use clap::Args;
use ringleader_check::{Bounds, CheckReport, NetworkKind, Options, PropertyOutcome};
use ringleader_core::NodeId;
use ringleader_sim::scenario::Initiators;

/// Model-check an algorithm: every execution on a few nodes, shortest counterexamples or proofs
///
/// Explores every execution of an algorithm on N nodes and checks the simulator's properties in
/// every state: breadth-first by default, so a violated property's counterexample is a shortest
/// one; depth-first (--search dfs, or --search por: with sleep sets, half the successors
/// generated) to prove properties on spaces too large for that. Timers may fire at any moment:
/// durations are ignored.
///
/// Examples:
///   ringleader check --algo central-timeout --nodes 3 --mermaid ce.mmd
///   ringleader check --algo central --nodes 4 --json
///   ringleader check --algo chang-roberts --nodes 3 --network lossy --expect termination
///   ringleader check --algo central --nodes 3 --crashes 1 --trace ce.jsonl --expect liveness
///   ringleader check --algo ricart-agrawala --nodes 4 --acquires 2 --search por --threads 2
#[derive(Args, Debug, Default)]
#[command(verbatim_doc_comment)]
pub struct CheckArgs {
    /// Algorithm to check (see `ringleader list`).
    #[arg(long, value_name = "NAME")]
    pub algo: String,
    /// Number of nodes (ids 1..N by position) [default: 3].
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub nodes: u32,
    /// How many crashes may happen in one execution, any node, any moment [default: 0].
    #[arg(long, value_name = "K", default_value_t = 0)]
    pub crashes: u32,
    /// Crashed nodes may recover (Process::on_recover), at any moment.
    #[arg(long)]
    pub recover: bool,
    /// What the network may do: ordered (FIFO per link), unordered, lossy (unordered, may lose
    /// any message), duplicating (unordered, may deliver a message again) [default: unordered].
    #[arg(long, value_name = "KIND", default_value = "unordered")]
    pub network: String,
    /// Elections: ids that may be asked to start an election, once each, at any moment: all,
    /// lowest, highest, none, or ids like 1,3 [default: all].
    #[arg(long, value_name = "WHO")]
    pub initiators: Option<Initiators>,
    /// Mutual exclusion: ids that may ask for the critical section [default: every id but 1,
    /// which is the coordinator of the centralized algorithms].
    #[arg(long, value_name = "WHO")]
    pub requesters: Option<Initiators>,
    /// Mutual exclusion: how many times each requester may ask (Acquire) [default: 1].
    #[arg(long, value_name = "K", default_value_t = 1)]
    pub acquires: u32,
    /// Explore at most D steps deep (properties then hold up to that depth only). Breadth-first
    /// search only.
    #[arg(long, value_name = "D")]
    pub depth: Option<usize>,
    /// Stop the search after this many generated states (repeats included); the report then
    /// says "bounded by the state budget" [default: no limit].
    #[arg(long, value_name = "N")]
    pub max_states: Option<usize>,
    /// Stop the search once the process holds this much memory, e.g. 512MiB, 4GiB; the report
    /// then says "bounded by the memory budget" [default: 4GiB].
    #[arg(long, value_name = "SIZE", default_value = "4GiB", value_parser = parse_size)]
    pub max_memory: u64,
    /// Stop the search once it has run this long, e.g. 60s, 500ms; the report then says
    /// "bounded by the time budget" [default: no limit].
    #[arg(long, value_name = "DURATION", value_parser = crate::service_client::parse_wait)]
    pub max_time: Option<std::time::Duration>,
    /// Explore every reachable state even once every property is decided. Without it the search
    /// ends when each `always` property has a counterexample and each `sometimes` property an
    /// example, and the report says the state counts are of the part explored.
    #[arg(long)]
    pub exhaustive: bool,
    /// Checker threads; with more than one, counterexamples may not be the shortest [default: 1].
    #[arg(long, value_name = "T", default_value_t = 1)]
    pub threads: usize,
    /// Search order: bfs (breadth-first: shortest counterexamples, but the whole frontier is held
    /// in memory, several hundred bytes per state), dfs (depth-first: 12 to 23 bytes per state
    /// seen, so spaces ten times larger fit; its counterexamples may be longer than the
    /// shortest; no --depth) or por (depth-first with sleep sets, a partial-order reduction:
    /// the same states and verdicts, fewer states generated; no --depth, no --symmetry). Use dfs or por to prove a property on a large space [default: bfs, or dfs
    /// with --symmetry].
    #[arg(long, value_name = "ORDER")]
    pub search: Option<ringleader_check::Search>,
    /// Symmetry reduction: explore one state of each class of states that are renamings of each
    /// other under the algorithm's declared group (suzuki-kasami: rotations). Implies --search
    /// dfs. An algorithm whose rules compare ids declares none, and is refused.
    #[arg(long)]
    pub symmetry: bool,
    /// Algorithm parameter (repeatable), e.g. --param timeout=20ms.
    #[arg(long, value_name = "KEY=VALUE", value_parser = crate::sim::parse_param)]
    pub param: Vec<(String, String)>,
    /// A property expected to be violated (or, for `sometimes` properties, unreachable).
    #[arg(long, value_name = "PROPERTY")]
    pub expect: Vec<String>,
    /// Print exactly one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
    /// Write the counterexample (or, if none, the first example) as a JSON-lines trace.
    #[arg(long, value_name = "FILE.jsonl")]
    pub trace: Option<PathBuf>,
    /// Write the counterexample (or, if none, the first example) as a Mermaid diagram.
    #[arg(long, value_name = "FILE.mmd")]
    pub mermaid: Option<PathBuf>,
    /// Write the counterexample (or, if none, the first example) as a self-contained HTML page:
    /// a space-time diagram with step controls.
    #[arg(long, value_name = "FILE.html")]
    pub html: Option<PathBuf>,
    /// Which property's counterexample (or example) --trace and --mermaid write [default: the
    /// first violated property, else the first property reached].
    #[arg(long, value_name = "PROPERTY")]
    pub show: Option<String>,
    /// Open stateright's web explorer on the model at ADDR (e.g. localhost:3000) instead.
    #[arg(long, value_name = "ADDR")]
    pub explore: Option<String>,
}

/// Reads a byte count: a number with an optional unit (B, KiB, MiB, GiB, TiB; K, M, G, T mean
/// the same powers of 1024).
fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return Err(format!("{s:?}: expected a size like 512MiB or 4GiB")),
    };
    let x: f64 = num.parse().map_err(|_| format!("{s:?}: expected a size like 512MiB or 4GiB"))?;
    let bytes = x * (1u64 << shift) as f64;
    if !(1.0..1e18).contains(&bytes) {
        return Err(format!("{s:?}: a size between 1 byte and 1 EiB"));
    }
    Ok(bytes as u64)
}

/// Positions named by `who` among `n` nodes (position i holds id i + 1).
fn positions(who: &Initiators, n: u32, flag: &str) -> anyhow::Result<Vec<NodeId>> {
    Ok(match who {
        Initiators::All => (0..n).collect(),
        Initiators::Lowest => vec![0],
        Initiators::Highest => vec![n - 1],
        Initiators::None => Vec::new(),
        Initiators::Ids(ids) => {
            let mut v = Vec::new();
            for &id in ids {
                if id == 0 || id > n as u64 {
                    bail!("--{flag} {id}: ids are 1..{n}");
                }
                v.push(id as NodeId - 1);
            }
            v
        }
    })
}

impl CheckArgs {
    pub(crate) fn bounds(&self) -> anyhow::Result<Bounds> {
        let network: NetworkKind = self.network.parse().map_err(|e: String| anyhow::anyhow!("--{e}"))?;
        if self.nodes == 0 || self.nodes > 16 {
            bail!("--nodes {}: the model checker explores 1 to 16 nodes", self.nodes);
        }
        if self.crashes > self.nodes {
            bail!("--crashes {}: at most the {} nodes can crash", self.crashes, self.nodes);
        }
        if self.acquires == 0 || self.acquires > 16 {
            bail!("--acquires {}: each requester acquires 1..16 times", self.acquires);
        }
        if self.threads == 0 || self.threads > 1024 {
            bail!("--threads {}: give 1..1024 checker threads", self.threads);
        }
        if self.depth == Some(0) {
            bail!("--depth 0: a search explores at least one step (give 1 or more)");
        }
        if self.symmetry && self.search == Some(ringleader_check::Search::BreadthFirst) {
            bail!(
                "--symmetry with --search bfs: symmetry reduction runs on the depth-first search (drop --search or give dfs)"
            );
        }
        let mut b = Bounds::new(self.nodes);
        b.network = network;
        b.crashes = self.crashes;
        b.recover = self.recover;
        b.acquires = self.acquires;
        if let Some(w) = &self.initiators {
            b.initiators = positions(w, self.nodes, "initiators")?;
        }
        if let Some(w) = &self.requesters {
            b.requesters = positions(w, self.nodes, "requesters")?;
        }
        b.params = self.param.iter().cloned().collect::<BTreeMap<_, _>>();
        Ok(b)
    }
}

fn human(out: &CheckReport, chosen: Option<&PropertyOutcome>, args: &CheckArgs) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "model      {} ({}), {} nodes, {} network, up to {} crash{}{}",
        out.algorithm,
        out.family,
        out.nodes,
        out.network,
        out.crashes,
        if out.crashes == 1 { "" } else { "es" },
        if out.recover { " with recovery" } else { "" }
    );
    let _ = writeln!(
        s,
        "explored   {} states, {} unique, depth {}, {:.3} s{}",
        out.states,
        out.unique_states,
        out.depth,
        out.seconds,
        match (&out.bounded_by, out.complete) {
            (Some(b), _) => format!(" (bounded by {b}: properties hold only in the states explored)"),
            (None, false) if out.decided_early => {
                " (stopped once every property was decided; --exhaustive explores every state)".to_string()
            }
            (None, true) => " (every reachable state)".to_string(),
            (None, false) => " (bounded)".to_string(),
        }
    );
    if out.search == ringleader_check::Search::SleepSets {
        let _ = writeln!(
            s,
            "search     depth-first with sleep sets (partial-order reduction; a fingerprint and a sleep set per state seen)"
        );
    } else if out.search != ringleader_check::Search::BreadthFirst || out.symmetry.is_some() {
        let _ = writeln!(
            s,
            "search     depth-first (a fingerprint per state seen){}",
            out.symmetry.map_or(String::new(), |g| format!(", one state per class of renamings ({g})"))
        );
    }
    for (i, p) in out.properties.iter().enumerate() {
        let head = if i == 0 { "property  " } else { "          " };
        let verdict = match (p.kind, p.holds) {
            ("always", true) => "holds".to_string(),
            ("always", false) => format!(
                "VIOLATED: counterexample of {} steps: {}",
                p.length.unwrap_or(0),
                p.detail.as_deref().unwrap_or("")
            ),
            (_, true) => format!("reached in {} steps", p.length.unwrap_or(0)),
            (_, false) if out.complete => "NEVER reached".to_string(),
            (_, false) => "not reached in the states explored".to_string(),
        };
        let expected = if args.expect.iter().any(|e| e == p.name) { " (expected)" } else { "" };
        let _ = writeln!(s, "{head} {:<12} {:<9} {verdict}{expected}", p.name, p.kind);
    }
    if !out.shortest && out.properties.iter().any(|p| p.length.is_some()) {
        let how = if out.search != ringleader_check::Search::BreadthFirst {
            "depth-first".to_string()
        } else {
            format!("on {} threads", out.threads)
        };
        let _ = writeln!(
            s,
            "note       found {how}: a path may be longer than the shortest (--search bfs --threads 1 finds shortest ones)"
        );
    }
    if let Some(p) = chosen {
        let what = if p.violated() { "counterexample" } else { "example" };
        let _ = writeln!(s, "{what} ({}), {} steps:", p.name, p.steps.len());
        for (i, step) in p.steps.iter().enumerate() {
            let _ = writeln!(s, "  {:>3}. {step}", i + 1);
        }
    }
    s
}

/// Runs `ringleader check`; returns the exit status.
pub fn run(args: CheckArgs) -> crate::CommandResult {
    if ringleader_registry::find(&args.algo).is_none() {
        let names: Vec<&str> = ringleader_registry::all().iter().map(|i| i.name).collect();
        bail!("unknown algorithm {:?}; known: {}", args.algo, names.join(", "));
    }
    if !ringleader_registry::is_plain(&args.algo) {
        bail!(
            "{:?} cannot be model-checked: its state holds a library engine, not plain data the checker can store and compare; judge it in the simulator (`sim`, `sweep`)",
            args.algo
        );
    }
    let bounds = args.bounds()?;
    if let Some(addr) = &args.explore {
        std::net::TcpListener::bind(addr.as_str())
            .map_err(|e| anyhow::anyhow!("--explore {addr}: cannot listen there: {e}"))?;
        eprintln!("explorer   http://{addr}/ (Ctrl-C to stop)");
        ringleader_check::explore(&args.algo, bounds, addr, args.threads)?;
        return Ok(crate::ExitStatus::Ok);
    }
    let opts = Options {
        depth: args.depth,
        threads: args.threads,
        max_states: args.max_states,
        max_memory: Some(args.max_memory),
        max_time: args.max_time,
        exhaustive: args.exhaustive,
        search: args.search.unwrap_or_default(),
        symmetry: args.symmetry,
    };
    if args.max_states == Some(0) {
        bail!("--max-states must be at least 1");
    }
    if args.depth.is_none()
        && let Some(why) = ringleader_check::unbounded_reason(&args.algo)
    {
        let hint = if opts.search != ringleader_check::Search::BreadthFirst || opts.symmetry {
            "Try --max-time 60s (a depth-first search takes no --depth)."
        } else {
            "Try --depth 20."
        };
        eprintln!(
            "warning: the state space of {} is infinite ({why}); without --depth the search ends only at \
             the memory budget ({} MiB; --max-memory), --max-states or --max-time. {hint}",
            args.algo,
            args.max_memory >> 20
        );
    }
    let mut report = |p: &ringleader_check::Progress| {
        eprintln!(
            "progress   {} states, {} unique, depth {}, {:.0} states/s, {}",
            p.states,
            p.unique_states,
            p.depth,
            p.states as f64 / p.seconds.max(1e-9),
            p.memory.map_or("memory unknown".to_string(), |m| format!("{} MiB resident", m >> 20))
        );
    };
    let mut out = ringleader_check::check_with_progress(&args.algo, bounds, &opts, &mut report)?;
    let known: Vec<&str> = out.properties.iter().map(|p| p.name).collect();
    for (flag, e) in args.expect.iter().map(|e| ("expect", e)).chain(args.show.iter().map(|e| ("show", e))) {
        if !known.contains(&e.as_str()) {
            bail!("--{flag} {e}: {} has no such property; it checks: {}", out.algorithm, known.join(", "));
        }
    }
    for p in &mut out.properties {
        p.expected_violation = args.expect.iter().any(|e| e == p.name);
    }
    let chosen = match &args.show {
        Some(name) => out.properties.iter().find(|p| p.name == name && p.length.is_some()),
        None => out
            .properties
            .iter()
            .find(|p| p.violated())
            .or_else(|| out.properties.iter().find(|p| p.holds && p.length.is_some())),
    };
    if let Some(p) = chosen {
        if let Some(path) = &args.trace {
            let mut f = std::io::BufWriter::new(
                std::fs::File::create(path).with_context(|| format!("{}", path.display()))?,
            );
            for r in &p.trace {
                serde_json::to_writer(&mut f, r)?;
                f.write_all(b"\n")?;
            }
            f.flush().with_context(|| format!("{}", path.display()))?;
        }
        if let Some(path) = &args.mermaid {
            std::fs::write(path, out.mermaid(p)).with_context(|| format!("{}", path.display()))?;
        }
        if let Some(path) = &args.html {
            std::fs::write(path, html_page(&out, p, &args)?)
                .with_context(|| format!("{}", path.display()))?;
        }
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        print!("{}", human(&out, chosen, &args));
        if chosen.is_some() {
            if let Some(p) = &args.trace {
                println!("trace      {}", p.display());
            }
            if let Some(p) = &args.mermaid {
                println!("diagram    {}", p.display());
            }
            if let Some(p) = &args.html {
                println!("html       {}", p.display());
            }
        } else if args.trace.is_some() || args.mermaid.is_some() || args.html.is_some() {
            println!("nothing to draw: no counterexample and no example");
        }
    }
    // An unreached `sometimes` property is a finding only when every state was explored.
    let found: BTreeSet<&str> = out
        .properties
        .iter()
        .filter(|p| !p.holds && (out.complete || p.kind == "always"))
        .map(|p| p.name)
        .collect();
    let want: BTreeSet<&str> = args.expect.iter().map(String::as_str).collect();
    Ok(crate::ExitStatus::violation_unless(found == want))
}

/// The most states a `check --html` page carries to explore by hand on its own.
const PAGE_STATES: usize = 5_000;

/// The most bytes of states a `check --html` page carries (4 MiB).
const PAGE_GRAPH_BYTES: usize = 4 << 20;

/// Every state of the model `args` describe, for the page to explore by hand (none when the
/// model has more than [`PAGE_STATES`]: the page then links to `ringleader ui`).
fn explore_graph(args: &CheckArgs) -> anyhow::Result<Option<serde_json::Value>> {
    let bounds = args.bounds()?;
    let duplicating = bounds.network == NetworkKind::Duplicating;
    Ok(match ringleader_check::by_hand::graph(&args.algo, bounds, PAGE_STATES)? {
        Some(g) => {
            let mut v = serde_json::to_value(g)?;
            v["duplicating"] = serde_json::Value::Bool(duplicating);
            // A page stays a page: a graph of more than PAGE_GRAPH_BYTES is left to the server.
            (v.to_string().len() <= PAGE_GRAPH_BYTES).then_some(v)
        }
        None => None,
    })
}

/// The address of `ringleader ui`'s explore page (on its default address) at the end of `path`
/// on the model `args` describe.
fn explore_link(args: &CheckArgs, path: &[usize]) -> String {
    fn form(v: &str) -> String {
        v.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                    (b as char).to_string()
                }
                b' ' => "+".to_string(),
                _ => format!("%{b:02X}"),
            })
            .collect()
    }
    let mut extra = Vec::new();
    if args.recover {
        extra.push("--recover".to_string());
    }
    if let Some(w) = &args.initiators {
        extra.push(format!("--initiators {w}"));
    }
    if let Some(w) = &args.requesters {
        extra.push(format!("--requesters {w}"));
    }
    for (k, v) in &args.param {
        extra.push(format!("--param {k}={v}"));
    }
    let path: Vec<String> = path.iter().map(usize::to_string).collect();
    format!(
        "http://127.0.0.1:8080/explore#algo={}&nodes={}&network={}&crashes={}&acquires={}&extra={}&path={}",
        form(&args.algo),
        args.nodes,
        form(&args.network),
        args.crashes,
        args.acquires,
        form(&extra.join(" ")),
        path.join(".")
    )
}

/// The HTML page of the path `ringleader check` shows (`--html`).
fn html_page(out: &CheckReport, p: &PropertyOutcome, args: &CheckArgs) -> anyhow::Result<String> {
    let what = if p.violated() { "counterexample" } else { "example" };
    let last = p.trace.iter().map(|r| r.step).max().unwrap_or(0);
    let mut report = serde_json::to_value(out)?;
    // The viewer reads `violations` for the rectangle's caption: the path's last step.
    report["violations"] = if p.violated() {
        serde_json::json!([{ "property": p.name, "step": last, "detail": p.detail.clone().unwrap_or_default() }])
    } else {
        serde_json::json!([])
    };
    // The path, handed to the page where one explores by hand (`ringleader ui`'s /explore).
    if !p.path.is_empty() {
        report["explore"] = serde_json::Value::String(explore_link(args, &p.path));
    }
    let verdict = human(out, None, args)
        .lines()
        .filter(|l| l.contains(p.name))
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" ");
    Ok(ringleader_viz::html(&ringleader_viz::RunView {
        title: format!("{} {what} of {} ({} nodes, model checker)", p.name, out.algorithm, out.nodes),
        source: "check",
        uids: &out.uids,
        records: &p.trace,
        gaps: &[],
        total_records: p.trace.len() as u64,
        report,
        verdict,
        ok: p.holds || p.expected_violation,
        violation_window: p.violated().then_some((last, None)),
        explore: explore_graph(args)?,
    }))
}
