//! `ringleader check --explore` in a real browser: headless Chromium loads stateright's
//! explorer served by the binary, runs its JavaScript, and renders the counterexample
//! for `central-timeout` (two participants holding at once).
//!
//! Needs a Chromium binary (`chromium`, `chromium-browser`, or the path in
//! `RINGLEADER_BROWSER`); `scripts/test.sh` installs Debian's `chromium` when it is missing.
//! Waits are bounded polls on the explorer's own status, never fixed sleeps.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::common::until;

/// The explorer process; killed when the test ends, pass or fail.
struct Explorer(Child);

impl Drop for Explorer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn browser() -> String {
    if let Ok(b) = std::env::var("RINGLEADER_BROWSER") {
        return b;
    }
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {name}")])
            .output()
            .is_ok_and(|o| o.status.success());
        if found {
            return name.into();
        }
    }
    panic!(
        "no Chromium found: this test drives a real browser. Run scripts/test.sh (it installs \
         Debian's chromium), or `apt-get install chromium`, or set RINGLEADER_BROWSER"
    );
}

/// The DOM after the page's scripts ran, as headless Chromium prints it.
fn rendered(url: &str) -> String {
    let dir = std::env::temp_dir().join(format!("ringleader-browser-{}", std::process::id()));
    let mut child = Command::new(browser())
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=8000", "--dump-dom"])
        .arg(format!("--user-data-dir={}", dir.display()))
        .arg(url)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the browser starts");
    let status = until(Duration::from_secs(120), "the browser to render the page", || {
        child.try_wait().expect("browser status")
    });
    let mut dom = String::new();
    std::io::Read::read_to_string(child.stdout.as_mut().unwrap(), &mut dom).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(status.success(), "the browser failed: {status}");
    dom
}

#[test]
fn the_explorer_renders_the_central_timeout_counterexample_in_a_browser() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let base = format!("http://127.0.0.1:{port}");
    let _explorer = Explorer(
        Command::new(env!("CARGO_BIN_EXE_ringleader"))
            .args(["check", "--algo", "central-timeout", "--nodes", "3", "--explore"])
            .arg(format!("127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("ringleader starts"),
    );
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(10)))
        .build()
        .into();
    let status = |agent: &ureq::Agent| -> Option<serde_json::Value> {
        let mut r = agent.get(&format!("{base}/.status")).call().ok()?;
        serde_json::from_str(&r.body_mut().read_to_string().ok()?).ok()
    };
    until(Duration::from_secs(30), "the explorer to listen", || status(&agent));

    // What the page's "Run to completion" button does, then wait until the search is done.
    let r = agent.post(&format!("{base}/.runtocompletion")).send_empty().expect("explorer answers");
    assert!(r.status().is_success(), "run to completion: {}", r.status());
    let done = until(Duration::from_secs(60), "the search to finish", || {
        status(&agent).filter(|s| s["done"] == true)
    });
    let properties = done["properties"].as_array().unwrap();
    let safety = properties.iter().find(|p| p[1] == "safety").expect("a safety property");
    let path = safety[2].as_str().expect("safety has a counterexample path");

    // The overview: the browser ran the page's scripts and shows the verdicts.
    let page = rendered(&format!("{base}/"));
    assert!(page.contains("CentralCoordinator"), "the model name is rendered: {page}");
    assert!(page.contains("Counterexample found"), "{page}");
    assert!(page.contains("Always safety"), "{page}");

    // The counterexample itself: the path of actions and the state where two participants hold.
    let ce = rendered(&format!("{base}/#/steps/{path}"));
    assert!(ce.contains("timer HolderSilent"), "the coordinator's re-grant is on the path: {ce}");
    assert!(ce.contains("receives Grant"), "{ce}");
    assert_eq!(ce.matches("participant: Holding").count(), 2, "two holders at the end of the path: {ce}");
}
