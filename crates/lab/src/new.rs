//! `ringleader lab new`: a Rust crate for a learner's own algorithm, on ringleader's `Process`
//! contract.
//!
//! The crate depends on ringleader's crates by path (the workspace the `ringleader` binary was
//! built from, or another one) and holds: an essay skeleton and a `Process` skeleton for the
//! family (`src/lib.rs`), one single-node rule test that fails until the learner writes the
//! first rule, and a `main` that hands the algorithm to ringleader's command line for learners
//! ([`crate::learner`]: `cargo run -- sim`, `check`, `grade`, `--html`; and `ui`, served by
//! `ringleader_playground::learner_main`). Ringleader's `Cargo.lock` is copied beside it, so that the
//! crate builds offline with the versions ringleader was built with.

use std::path::{Path, PathBuf};

use crate::LabError;
use crate::family::LabFamily;

/// The ringleader workspace this crate was compiled in (the default `--ringleader-path`).
pub fn workspace_root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    root.canonicalize().unwrap_or(root)
}

/// What differs between the families' skeletons.
struct Skeleton {
    family: &'static str,
    what: &'static str,
    messages: &'static str,
    kinds: &'static str,
    kind_index: &'static str,
    requests: &'static str,
    test: &'static str,
}

fn skeleton(family: LabFamily) -> Skeleton {
    match family {
        LabFamily::Mutex => Skeleton {
            family: "Mutex",
            what: "mutual exclusion",
            messages: "    /// Asks for permission to enter (your rules decide what it carries).\n    Request {\n        /// The request's logical timestamp.\n        ts: u64,\n    },\n    /// Gives permission.\n    Reply,",
            kinds: "\"request\", \"reply\"",
            kind_index: "Msg::Request { .. } => 0,\n            Msg::Reply => 1,",
            requests: "            Request::Acquire => {\n                // TODO rule 1: ask the others (out.send(to, Msg::Request { .. })), and enter\n                // (out.emit(Event::Entered { fencing })) once every permission is in.\n            }\n            Request::Release => {\n                // TODO: leave (out.emit(Event::Exited)) and answer the requests you deferred.\n            }",
            test: "    /// A node alone enters as soon as it asks: nobody else must agree.\n    #[test]\n    fn a_lone_node_enters_at_once() {\n        let mut node = harness(1);\n        let events = node.request(Request::Acquire).emitted();\n        assert!(matches!(events.as_slice(), [Event::Entered { .. }]), \"{events:?}\");\n    }",
        },
        LabFamily::Election => Skeleton {
            family: "Election",
            what: "leader election",
            messages: "    /// Starts (or passes on) an election.\n    Election {\n        /// The candidate's uid.\n        candidate: u64,\n    },\n    /// Announces the coordinator.\n    Coordinator {\n        /// Its uid.\n        leader: u64,\n    },",
            kinds: "\"election\", \"coordinator\"",
            kind_index: "Msg::Election { .. } => 0,\n            Msg::Coordinator { .. } => 1,",
            requests: "            Request::StartElection => {\n                // TODO rule 1: out.emit(Event::ElectionStarted), then send your ELECTION; once\n                // elected, out.emit(Event::Leader { leader, term: 0 }).\n            }",
            test: "    /// A node alone elects itself when it starts an election.\n    #[test]\n    fn a_lone_node_elects_itself() {\n        let mut node = harness(1);\n        let events = node.request(Request::StartElection).emitted();\n        assert!(events.contains(&Event::Leader { leader: 1, term: 0 }), \"{events:?}\");\n    }",
        },
        LabFamily::Clock => Skeleton {
            family: "Clock",
            what: "logical clocks",
            messages: "    /// An application message, carrying the sender's clock.\n    App {\n        /// The sender's clock at the send.\n        clock: u64,\n    },",
            kinds: "\"app\"",
            kind_index: "Msg::App { .. } => 0,",
            requests: "            Request::Local => {\n                // TODO rule 1: tick, then out.emit(Event::Stamped { lamport, vector: Vec::new() }).\n            }\n            Request::SendTo { to } => {\n                // TODO rule 2: tick, send Msg::App with your clock, and emit\n                // Event::StampedMessage { message, receive: false, lamport, vector: Vec::new() }.\n                let _ = to;\n            }",
            test: "    /// A local event ticks the clock from 0 to 1.\n    #[test]\n    fn a_local_event_ticks_the_clock() {\n        let mut node = harness(2);\n        let events = node.request(Request::Local).emitted();\n        assert_eq!(events, vec![Event::Stamped { lamport: 1, vector: Vec::new() }]);\n    }",
        },
        LabFamily::Deadlock => Skeleton {
            family: "Deadlock",
            what: "deadlock detection",
            messages: "    /// A probe: whose wait is chased, and the path it took.\n    Probe {\n        /// The initiator's position.\n        initiator: NodeId,\n        /// The positions it went through.\n        path: Vec<NodeId>,\n    },",
            kinds: "\"probe\"",
            kind_index: "Msg::Probe { .. } => 0,",
            requests: "            Request::WaitFor { holders } => {\n                // TODO rule 1: remember the holders and send each of them a probe; a probe of\n                // yours that comes back means a cycle: out.emit(Event::DeadlockDetected { cycle }).\n                let _ = holders;\n            }\n            Request::StopWaiting { holder } => {\n                // TODO: the holder granted: you no longer wait for it.\n                let _ = holder;\n            }",
            test: "    /// A node that starts waiting chases its edge: one probe to its holder.\n    #[test]\n    fn a_node_that_waits_sends_a_probe_to_its_holder() {\n        let mut node = harness(2);\n        let sent = node.request(Request::WaitFor { holders: vec![1] }).sent();\n        assert_eq!(sent.len(), 1, \"{sent:?}\");\n        assert_eq!(sent[0].0, 1);\n    }",
        },
    }
}

const LIB: &str = r#"//! # {{NAME}}: your {{WHAT}} algorithm
//!
//! *Sources: the paper and the textbook chapter you followed.*
//!
//! ## The idea
//! TODO: in one paragraph, why the algorithm works.
//!
//! ## The rules
//! 1. TODO: what a node does when the application asks (`on_request`).
//! 2. TODO: what it does on each message (`on_message`).
//!
//! ## Costs
//! TODO: messages per operation, with the formula, and the figure `cargo run -- sim` measures.
//!
//! ## Assumptions and known flaws
//! TODO: what the network must do (reliable? FIFO?), crashes, and what breaks otherwise.

use ringleader_algorithms::{Algorithm, Family, ParamError, Setup};
// `Event`: what your rules report (out.emit(Event::…)).
#[allow(unused_imports)]
use ringleader_core::{Context, Event, Message, NodeId, Outbox, Process, Request};
use serde::{Deserialize, Serialize};

/// The messages of your algorithm: rename and add as your rules need.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
{{MESSAGES}}
}

impl Message for Msg {
    const KINDS: &'static [&'static str] = &[{{KINDS}}];
    fn kind_index(&self) -> usize {
        match self {
            {{KIND_INDEX}}
        }
    }
}

/// Your timers (timeouts): add variants, arm them with `out.set_timer(timer, after)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Timer {}

/// One node's state. Everything here must be plain data: the simulator and the model checker
/// copy and compare it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Node {
    /// This node's position (0-based; its uid is `cx.uid()`).
    me: NodeId,
    /// How many nodes there are.
    n: usize,
}

impl Process for Node {
    type Msg = Msg;
    type Timer = Timer;

    fn on_message(&mut self, cx: &Context, from: NodeId, msg: Msg, out: &mut Outbox<Msg, Timer>) {
        // TODO rule 2.
        let _ = (cx, from, msg, out);
    }

    fn on_timer(&mut self, _cx: &Context, timer: Timer, _out: &mut Outbox<Msg, Timer>) {
        match timer {}
    }

    fn on_request(&mut self, cx: &Context, req: Request, out: &mut Outbox<Msg, Timer>) {
        let _ = (cx, &out);
        match req {
{{REQUESTS}}
            _ => {}
        }
    }

    fn on_recover(&mut self, _cx: &Context, _out: &mut Outbox<Msg, Timer>) {
        // TODO: what survives a crash (stable storage) and what is forgotten.
    }
}

impl Algorithm for Node {
    const NAME: &'static str = "{{NAME}}";
    const FAMILY: Family = Family::{{FAMILY}};
    const SUMMARY: &'static str = "TODO: one line";
    type Config = ();

    fn configure(_setup: &Setup) -> Result<(), ParamError> {
        Ok(())
    }

    fn new(me: NodeId, _config: &(), setup: &Setup) -> Self {
        Node { me, n: setup.uids.len() }
    }
}

#[cfg(test)]
mod tests {
    //! Rule tests: one node, one input, the exact effects (ringleader_core::harness).
    use super::*;
    use ringleader_core::Topology;
    use ringleader_core::harness;

    /// Position 0 of `n` nodes (uids 1..n), fully connected.
    fn harness(n: usize) -> harness::Harness<Node> {
        let uids: Vec<u64> = (1..=n as u64).collect();
        let topology = Topology::Complete { n: n as u32 };
        let node = Node { me: 0, n };
        harness::Harness::new(node, 0, uids, topology)
    }

{{TEST}}
}
"#;

const MAIN: &str = r#"//! `cargo run -- sim [--nodes N] [--seed S] [--scenario FILE] [--html FILE]` runs your
//! algorithm under ringleader's simulator with its family's checkers;
//! `cargo run -- check [--nodes N] [--depth D]` model-checks it;
//! `cargo run -- grade [--algo-like A]` runs the family's battery and the model checker;
//! `cargo run -- ui` serves the browser playground with it beside ringleader's algorithms.

fn main() -> std::process::ExitCode {
    ringleader_playground::learner_main::<{{CRATE}}::Node>()
}
"#;

const MANIFEST: &str = r#"[package]
name = "{{NAME}}"
version = "0.1.0"
edition = "2024"

[dependencies]
ringleader-core = { path = "{{RL}}/crates/core" }
ringleader-algorithms = { path = "{{RL}}/crates/algorithms" }
ringleader-lab = { path = "{{RL}}/crates/lab" }
ringleader-playground = { path = "{{RL}}/crates/playground" }
serde = { version = "1", features = ["derive"] }

# A crate of its own, not a member of an enclosing workspace.
[workspace]
"#;

const README: &str = r#"# {{NAME}}

Your {{WHAT}} algorithm on ringleader's `Process` contract (written by `ringleader lab new`).

1. Write the essay at the top of `src/lib.rs`, then the rules.
2. `cargo test`: the rule test fails until the first rule is written.
3. `cargo run -- sim --nodes 5 --html run.html`: a simulated run, judged by the family's
   checkers, and its space-time page. `--scenario FILE` takes ringleader's scenario files.
4. `cargo run -- check --nodes 3`: every interleaving of a small system.
5. `cargo run -- grade --algo-like ricart-agrawala` (or `ringleader lab grade --crate .`): the
   family's battery, seeded sweeps and the model checker on one report card.
6. `cargo run -- ui`, then open http://127.0.0.1:8080/: the browser playground, your algorithm
   beside ringleader's of its family, faults added by clicking.
"#;

/// Writes the crate `name` for `family` into `dir` (which must not exist or be empty),
/// depending on the ringleader workspace at `ringleader`. Returns the files written.
pub fn new_crate(
    dir: &Path,
    name: &str,
    family: LabFamily,
    ringleader: &Path,
) -> Result<Vec<PathBuf>, LabError> {
    let bad = |m: String| Err(LabError::Config(m));
    let valid = name.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if !valid {
        return bad(format!(
            "crate name {name:?}: lowercase letters, digits, - and _, starting with a letter"
        ));
    }
    if !["core", "lab", "playground"]
        .iter()
        .all(|c| ringleader.join("crates").join(c).join("Cargo.toml").is_file())
    {
        return bad(format!(
            "--ringleader-path {}: not a ringleader workspace (no crates/core, crates/lab and crates/playground there)",
            ringleader.display()
        ));
    }
    if dir.exists() && dir.read_dir().map(|mut d| d.next().is_some()).unwrap_or(true) {
        return bad(format!("{} exists and is not empty: choose another NAME or directory", dir.display()));
    }
    let rl = ringleader.canonicalize().unwrap_or_else(|_| ringleader.to_path_buf());
    let s = skeleton(family);
    let fill = |t: &str| {
        t.replace("{{NAME}}", name)
            .replace("{{CRATE}}", &name.replace('-', "_"))
            .replace("{{WHAT}}", s.what)
            .replace("{{FAMILY}}", s.family)
            .replace("{{MESSAGES}}", s.messages)
            .replace("{{KINDS}}", s.kinds)
            .replace("{{KIND_INDEX}}", s.kind_index)
            .replace("{{REQUESTS}}", s.requests)
            .replace("{{TEST}}", s.test)
            .replace("{{RL}}", &rl.display().to_string())
    };
    let io = |what: &Path| {
        let what = what.display().to_string();
        move |source| LabError::Io { what: format!("writing {what}"), source }
    };
    std::fs::create_dir_all(dir.join("src")).map_err(io(dir))?;
    let mut files = vec![
        (dir.join("Cargo.toml"), fill(MANIFEST)),
        (dir.join("README.md"), fill(README)),
        (dir.join("src/lib.rs"), fill(LIB)),
        (dir.join("src/main.rs"), fill(MAIN)),
    ];
    if let Ok(lock) = std::fs::read_to_string(rl.join("Cargo.lock")) {
        files.push((dir.join("Cargo.lock"), lock));
    }
    for (path, text) in &files {
        std::fs::write(path, text).map_err(io(path))?;
    }
    Ok(files.into_iter().map(|(p, _)| p).collect())
}
