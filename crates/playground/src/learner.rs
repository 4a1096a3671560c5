//! The playground of a learner's crate: the learner's algorithm first, and ringleader's
//! algorithms of its family beside it, on the same flags and fault plan.

use std::marker::PhantomData;
use std::process::ExitCode;

use ringleader_algorithms::PlainAlgorithm;
use ringleader_lab::learner;
use ringleader_lab::simulated::{self, RunFlags};

use crate::{AlgorithmEntry, MAX_UI_NODES, RunResponse, Runs, serve};

/// Runs for a learner's algorithm `A`: `--algo` absent or `A`'s name runs `A` (as
/// `cargo run -- sim` does); another name runs ringleader's algorithm of that name, which must
/// be of `A`'s family.
pub struct LearnerRuns<A>(PhantomData<fn() -> A>);

impl<A> Default for LearnerRuns<A> {
    fn default() -> Self {
        LearnerRuns(PhantomData)
    }
}

impl<A: PlainAlgorithm> Runs for LearnerRuns<A> {
    fn algorithms(&self) -> Vec<AlgorithmEntry> {
        let mut list = vec![AlgorithmEntry {
            name: A::NAME.to_string(),
            family: A::FAMILY.name().to_string(),
            summary: format!("yours: {}", A::SUMMARY),
        }];
        list.extend(ringleader_registry::all().into_iter().filter(|i| i.family == A::FAMILY).map(|i| {
            AlgorithmEntry {
                name: i.name.to_string(),
                family: i.family.name().to_string(),
                summary: i.summary.to_string(),
            }
        }));
        list
    }

    fn run(&self, args: &[String], scenario: Option<&std::path::Path>) -> Result<RunResponse, String> {
        let mut flags = RunFlags::parse(args)?;
        if flags.html.is_some() {
            return Err("--html writes a file; the playground offers downloads instead".into());
        }
        if let Some(path) = scenario {
            flags.scenario = Some(path.to_path_buf());
        }
        let theirs = flags.algo.clone().filter(|a| a != A::NAME);
        let name = theirs.as_deref().unwrap_or(simulated::stand_in(A::FAMILY));
        if let Some(other) = &theirs {
            match ringleader_registry::find(other) {
                Some(info) if info.family == A::FAMILY => {}
                Some(info) => {
                    return Err(format!(
                        "--algo {other}: of family {}; this playground compares {} algorithms",
                        info.family.name(),
                        A::FAMILY.name()
                    ));
                }
                None => {
                    return Err(format!("--algo {other}: no such algorithm; `ringleader list` names them"));
                }
            }
        }
        let cfg = flags.resolve(name)?;
        if cfg.nodes > MAX_UI_NODES {
            return Err(format!(
                "--nodes {}: the playground draws up to {MAX_UI_NODES} nodes; run bigger ones with `cargo run -- sim`",
                cfg.nodes
            ));
        }
        let result = match &theirs {
            None => simulated::simulate::<A>(&flags, true)?,
            Some(other) => {
                let opts = ringleader_sim::RunOptions { keep_trace: true, ..Default::default() };
                let mut r = ringleader_sim::run(&cfg, opts).map_err(|e| e.to_string())?;
                r.report.repro =
                    format!("ringleader sim --algo {other} {}", flags.repro_words()).trim_end().to_string();
                r
            }
        };
        RunResponse::of(&result, simulated::page(&result)?)
    }
}

/// `ui [--listen ADDR]` for a learner's algorithm `A`.
fn learner_ui<A: PlainAlgorithm>(args: &[String]) -> Result<(), String> {
    let listen = match args {
        [] => "127.0.0.1:8080".to_string(),
        [flag, addr] if flag == "--listen" => addr.clone(),
        _ => return Err("usage: ui [--listen ADDR] (default 127.0.0.1:8080; port 0 picks a free one)".into()),
    };
    serve(&listen, LearnerRuns::<A>::default()).map_err(|e| e.to_string())
}

/// The `main` of a learner's crate (`lab new` writes it): `ui` serves the playground with the
/// learner's algorithm `A` beside ringleader's of its family; every other command (`sim`,
/// `check`, `grade`) is [`ringleader_lab::learner::main`]'s.
pub fn learner_main<A: PlainAlgorithm>() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) != Some("ui") {
        return learner::main::<A>();
    }
    match learner_ui::<A>(&args[1..]) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use ringleader_algorithms::mutex::ricart_agrawala::RicartAgrawala;

    use super::*;
    use crate::{RunRequest, execute};

    fn args(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    /// The learner's algorithm is listed first, then ringleader's of its family only.
    #[test]
    fn the_learner_s_algorithm_comes_first_beside_its_family() {
        let list = LearnerRuns::<RicartAgrawala>::default().algorithms();
        assert!(list[0].summary.starts_with("yours: "), "{:?}", list[0]);
        assert!(list.iter().any(|a| a.name == "lamport"));
        assert!(list.iter().all(|a| a.family == "mutex"), "{list:?}");
    }

    /// Both sides of a comparison run on the same flags; the learner's repeats with the crate's
    /// command line, ringleader's with ringleader's; bad input is one line.
    #[test]
    fn a_comparison_runs_both_on_the_same_flags() {
        let runs = LearnerRuns::<RicartAgrawala>::default();
        // The page sends --plain (no story underneath): a learner's algorithm has none, so it
        // is taken and changes nothing.
        let flags = ["--nodes", "4", "--plain", "--crash", "3@5ms"];
        let mine = execute(&runs, RunRequest { args: args(&flags), scenario: None }).unwrap();
        assert!(mine.repro.starts_with("cargo run -- sim --nodes 4 --crash 3@5ms"), "{}", mine.repro);
        assert!(mine.html.contains("run-data"));
        let mut theirs_args = args(&["--algo", "lamport"]);
        theirs_args.extend(args(&flags));
        let theirs = execute(&runs, RunRequest { args: theirs_args, scenario: None }).unwrap();
        assert!(
            theirs.repro.starts_with("ringleader sim --algo lamport --nodes 4 --crash 3@5ms"),
            "{}",
            theirs.repro
        );
        assert_eq!(theirs.report["algorithm"], "lamport");
        let other =
            execute(&runs, RunRequest { args: args(&["--algo", "bully"]), scenario: None }).unwrap_err();
        assert!(other.contains("of family election"), "{other}");
        let bad = execute(&runs, RunRequest { args: args(&["--loss", "x"]), scenario: None }).unwrap_err();
        assert!(bad.starts_with("--loss \"x\""), "{bad}");
        let file = execute(
            &runs,
            RunRequest { args: vec![], scenario: Some("nodes = 3\n[network]\nloss = 1.5\n".into()) },
        )
        .unwrap_err();
        assert!(file.starts_with("scenario:3:"), "{file}");
    }
}
