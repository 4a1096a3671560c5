//! Language neutrality: a Ricart-Agrawala node written in Go (standard library only,
//! lab/examples/go/mutex_ra.go) passes the lab with the textbook's 2(N−1) messages per entry,
//! as the Python one does. No Maelstrom node library installs from PyPI (the `maelstrom`
//! package there models pulsating stars), so Go — Debian's `golang-go` — is the second
//! language. Skipped, with a message, where `go` is not installed.

use std::path::PathBuf;
use std::process::Command;

use ringleader_lab::{LabConfig, LabFamily, run};

#[test]
fn a_go_node_passes_with_2_n_minus_1_messages_per_entry() {
    if Command::new("go").arg("version").output().is_err() {
        eprintln!("skipped: no `go` toolchain on this machine (apt-get install golang-go)");
        return;
    }
    let scratch = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("lab-go");
    std::fs::create_dir_all(&scratch).unwrap();
    let source = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../lab/examples/go/mutex_ra.go");
    let binary = scratch.join("mutex_ra");
    let built = Command::new("go")
        .args(["build", "-o"])
        .arg(&binary)
        .arg(&source)
        .env("GOCACHE", scratch.join("cache"))
        .env("GO111MODULE", "off")
        .current_dir(&scratch)
        .output()
        .unwrap();
    assert!(built.status.success(), "go build: {}", String::from_utf8_lossy(&built.stderr));

    let mut c = LabConfig::new(LabFamily::Mutex, &binary.display().to_string(), 5);
    c.lockstep = true;
    c.algo_like = Some("ricart-agrawala".into());
    let r = run(&c).unwrap();
    assert!(r.ok(), "{}", r.render());
    assert_eq!((r.operations, r.messages), (10, 80), "{}", r.render());
    assert_eq!(r.cost.as_ref().unwrap().verdict, "exact");
}
