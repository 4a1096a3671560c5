//! The `repro` line of a run replays it byte for byte: for many algorithms and flag
//! combinations, run `sim --json`, run the repro line it printed, and compare the two JSON
//! objects (without the wall-clock time).

use std::process::Command;

/// `sim --json` with `args`; the JSON text without `wall_seconds`, and the repro line.
fn run(args: &[String]) -> (String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ringleader"))
        .arg("sim")
        .arg("--json")
        .args(args)
        .output()
        .expect("ringleader runs");
    assert_ne!(out.status.code(), Some(1), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    let mut v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    v.as_object_mut().unwrap().remove("wall_seconds");
    let repro = v["repro"].as_str().unwrap().to_string();
    (serde_json::to_string_pretty(&v).unwrap(), repro)
}

/// Splits a repro line as a POSIX shell would (it quotes with '…' only).
fn shell_words(line: &str) -> Vec<String> {
    let (mut words, mut word, mut quoted, mut any) = (Vec::new(), String::new(), false, false);
    for c in line.chars() {
        match c {
            '\'' => {
                quoted = !quoted;
                any = true;
            }
            ' ' if !quoted => {
                if any {
                    words.push(std::mem::take(&mut word));
                    any = false;
                }
            }
            c => {
                word.push(c);
                any = true;
            }
        }
    }
    if any {
        words.push(word);
    }
    words
}

fn combinations(algo: &str, family: &str) -> Vec<Vec<&'static str>> {
    let mut c: Vec<Vec<&str>> = vec![
        vec!["--seed", "3", "--ids", "random"],
        vec!["--latency", "uniform:500us..2ms", "--fifo", "--max-delay", "3ms"],
        // Faults and loss can keep retrying algorithms busy: a short explicit duration.
        vec!["--loss", "0.05", "--dup", "0.1", "--latency", "lognormal:1ms,0.5", "--duration", "2s"],
        vec!["--pause", "2@1ms..4ms", "--crash", "3@2ms", "--recover", "3@8ms", "--duration", "2s"],
        vec![
            "--partition",
            "1,2|3,4@1ms..6ms",
            "--clock-offset",
            "2ms",
            "--drift-ppm",
            "40",
            "--duration",
            "2s",
        ],
    ];
    match family {
        "election" => {
            c.push(vec!["--initiators", "none"]);
            c.push(vec!["--initiators", "all"]);
            c.push(vec!["--initiators", "2,3", "--ids", "descending"]);
        }
        "mutex" => {
            c.push(vec!["--workload", "poisson", "--entries", "5", "--rate", "50", "--hold", "500us"]);
            c.push(vec!["--workload", "saturated", "--entries", "6", "--hold", "2ms"]);
            c.push(vec!["--requesters", "2,3", "--entries", "4"]);
        }
        "clock" => {
            c.push(vec!["--entries", "20", "--rate", "100", "--fanout", "2"]);
            c.push(vec!["--requesters", "1,2", "--entries", "8"]);
        }
        "deadlock" => {
            c.push(vec!["--entries", "8", "--cycles", "0.5", "--holders", "1", "--hold", "2ms"]);
        }
        _ => {}
    }
    if algo == "chang-roberts" {
        // The default duration, written back as nothing.
        c.push(vec!["--initiators", "none", "--duration", "3600s"]);
    }
    c
}

#[test]
fn repro_lines_replay_byte_for_byte() {
    let list = Command::new(env!("CARGO_BIN_EXE_ringleader")).arg("list").output().unwrap();
    let list = String::from_utf8(list.stdout).unwrap();
    let mut checked = 0;
    for line in list.lines() {
        let mut cols = line.split_whitespace();
        let (algo, family) = (cols.next().unwrap(), cols.next().unwrap());
        for extra in combinations(algo, family) {
            let mut args: Vec<String> = vec!["--algo".into(), algo.into(), "--nodes".into(), "5".into()];
            args.extend(extra.iter().map(|s| s.to_string()));
            // Keep runs short where the run would otherwise go on (heartbeats never go quiet).
            if !extra.contains(&"--duration") && !matches!(family, "mutex" | "deadlock") {
                args.extend(["--duration".into(), "400ms".into()]);
            }
            let (first, repro) = run(&args);
            let words = shell_words(&repro);
            assert_eq!(&words[..2], ["ringleader", "sim"], "{repro}");
            let (again, repro_again) = run(&words[2..]);
            assert_eq!(repro, repro_again, "the repro line of {args:?} is not stable");
            assert!(first == again, "{args:?}\nrepro: {repro}\nfirst:\n{first}\nreplay:\n{again}");
            checked += 1;
        }
    }
    assert!(checked > 150, "{checked}");
}
