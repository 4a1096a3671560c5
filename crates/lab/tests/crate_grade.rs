//! `grade` in a learner's Rust crate (`cargo run -- grade`, `ringleader lab grade --crate`):
//! ringleader's own Ricart-Agrawala stands in for a learner's correct crate and passes with
//! its textbook cost; a mutex that enters without asking anybody is caught by the simulator's
//! battery and by the model checker, each failure with a repro line of the crate.

use ringleader_algorithms::mutex::ricart_agrawala::RicartAgrawala;
use ringleader_algorithms::{Algorithm, Family, ParamError, Setup};
use ringleader_core::{Context, Event, Message, NodeId, Outbox, Process, Request};
use ringleader_lab::crate_grade::crate_grade;
use serde::{Deserialize, Serialize};

fn args(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

#[test]
fn a_correct_crate_passes_with_the_textbook_cost_and_a_complete_check() {
    let (text, ok) = crate_grade::<RicartAgrawala>(&args(&[
        "--nodes",
        "3",
        "--seeds",
        "2",
        "--algo-like",
        "ricart-agrawala",
    ]))
    .unwrap();
    assert!(ok, "{text}");
    assert!(text.contains("textbook: 2(N−1) = 4 per entry"), "{text}");
    // Four battery runs on one name, two sweep seeds, the model checker.
    assert_eq!(text.lines().filter(|l| l.starts_with("  ok ")).count(), 6, "{text}");
    assert!(text.contains("model checker: 3 nodes, every interleaving"), "{text}");
    assert!(!text.contains("above") && !text.contains("below"), "{text}");
    assert!(text.trim_end().ends_with("PASS"), "{text}");
    let (json, _) =
        crate_grade::<RicartAgrawala>(&args(&["--nodes", "3", "--seeds", "1", "--json"])).unwrap();
    let card: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(card["ok"], true);
    assert_eq!(card["family"], "mutex");
}

/// The classic shortcut: a node enters as soon as its application asks.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
struct Impatient {
    grants: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
struct Nothing;

impl Message for Nothing {
    const KINDS: &'static [&'static str] = &["nothing"];
    fn kind_index(&self) -> usize {
        0
    }
}

impl Process for Impatient {
    type Msg = Nothing;
    type Timer = u8;
    fn on_message(&mut self, _: &Context, _: NodeId, _: Nothing, _: &mut Outbox<Nothing, u8>) {}
    fn on_timer(&mut self, _: &Context, _: u8, _: &mut Outbox<Nothing, u8>) {}
    fn on_request(&mut self, _: &Context, req: Request, out: &mut Outbox<Nothing, u8>) {
        match req {
            Request::Acquire => {
                self.grants += 1;
                out.emit(Event::Entered { fencing: self.grants });
            }
            Request::Release => out.emit(Event::Exited),
            _ => {}
        }
    }
    fn on_recover(&mut self, _: &Context, _: &mut Outbox<Nothing, u8>) {}
}

impl Algorithm for Impatient {
    const NAME: &'static str = "impatient";
    const FAMILY: Family = Family::Mutex;
    const SUMMARY: &'static str = "enters without asking anybody";
    type Config = ();
    fn configure(_: &Setup) -> Result<(), ParamError> {
        Ok(())
    }
    fn new(_: NodeId, _: &(), _: &Setup) -> Self {
        Impatient { grants: 0 }
    }
}

#[test]
fn a_mutex_that_does_not_ask_is_caught_by_the_battery_and_the_model_checker() {
    let (text, ok) = crate_grade::<Impatient>(&args(&["--nodes", "3", "--seeds", "1"])).unwrap();
    assert!(!ok, "{text}");
    assert!(text.trim_end().ends_with("FAIL"), "{text}");
    let safety =
        text.lines().skip_while(|l| !l.trim_start().starts_with("safety")).take(3).collect::<Vec<_>>();
    assert!(safety[1].contains("first failure: every node asks at once (seed 1)"), "{text}");
    assert!(safety[2].contains("repro: cargo run -- sim --nodes 3 --seed 1"), "{text}");
    let checker = text.lines().find(|l| l.contains("model checker")).unwrap();
    assert!(checker.starts_with("  FAIL"), "{text}");
}

#[test]
fn bad_input_is_one_line_naming_what_is_allowed() {
    for (words, needle) in [
        (&["--family", "election"][..], "is of family mutex"),
        (&["--algo-like", "paxos"][..], "ricart-agrawala, lamport, central"),
        (&["--nodes", "1"][..], "from 2 to 64"),
        (&["--seeds", "x"][..], "a whole number"),
        (&["--frobnicate", "1"][..], "unknown argument"),
        (&["--nodes"][..], "needs a value"),
    ] {
        let e = crate_grade::<RicartAgrawala>(&args(words)).unwrap_err();
        assert!(e.contains(needle), "{words:?}: {e}");
        assert!(!e.contains('\n') || e.starts_with("unknown") || e.contains("usage"), "{e}");
    }
}
