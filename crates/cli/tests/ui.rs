//! `ringleader ui` in a real browser: the playground lists every algorithm, runs one, takes a
//! crash from a click on a lifeline, runs again and shows the crash mark and the changed
//! verdict; bad input shows the CLI's words. Over plain HTTP, every algorithm of `ringleader
//! list` runs with its defaults.
//!
//! Waits are bounded polls on flags the page sets (`data-algorithms`, `data-runs`), never fixed
//! sleeps.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

mod browser;
use browser::Page;

/// A playground server on a free port; killed when dropped.
struct Server {
    child: Child,
    url: String,
}

impl Server {
    fn start() -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ringleader"))
            .args(["ui", "--listen", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .spawn()
            .expect("ringleader ui starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).expect("prints its address");
        let url = line.trim().strip_prefix("playground ").expect("`playground URL`").to_string();
        Server { child, url }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn algorithms() -> Vec<String> {
    let out = Command::new(env!("CARGO_BIN_EXE_ringleader")).arg("list").output().unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(String::from))
        .collect()
}

#[test]
fn a_click_on_a_lifeline_crashes_the_node_and_the_verdict_changes() {
    let server = Server::start();
    let page = Page::new();
    page.visit(&server.url);
    let limit = Duration::from_secs(60);
    page.wait_for("document.body.getAttribute('data-algorithms') !== null", limit, "the algorithm list");
    let listed = page.eval("+document.body.getAttribute('data-algorithms')").as_u64().unwrap();
    assert_eq!(listed as usize, algorithms().len(), "the playground offers every algorithm");

    // The centralized algorithm on three nodes, no faults: every property holds.
    page.eval("(document.getElementById('algo').value = 'central', document.getElementById('nodes').value = '3', 0)");
    page.click("#run");
    page.wait_for("document.body.getAttribute('data-runs') === '1'", limit, "the first run");
    let first = page.text(".run .verdict");
    assert!(first.starts_with("central: OK"), "{first}");
    let frame = "document.querySelector('.run iframe').contentWindow";
    page.wait_for(&format!("!!{frame}.ringleaderViewer"), limit, "the viewer in its frame");
    let crashes = format!("{frame}.document.querySelectorAll('.mark-crash').length");
    assert_eq!(page.eval(&crashes), serde_json::json!(0));

    // Click the coordinator's lifeline (column 0, uid 1) at an early row: a crash there.
    page.eval(&format!(
        "(function () {{ var w = {frame}; var p = w.ringleaderViewer.point(0, 1); \
         var svg = w.document.getElementById('diagram'); \
         svg.dispatchEvent(new w.MouseEvent('click', {{ clientX: p.x, clientY: p.y, bubbles: true }})); return 0; }})()"
    ));
    page.wait_for("document.body.getAttribute('data-runs') === '2'", limit, "the run with the crash");
    let fault = page.text("#faults .fault");
    assert!(fault.starts_with("crash 1@"), "{fault}");
    page.wait_for(&format!("!!{frame}.ringleaderViewer"), limit, "the second viewer");
    assert_eq!(page.eval(&crashes), serde_json::json!(1), "the crash mark is drawn");
    let second = page.text(".run .verdict");
    assert_ne!(first, second, "the crashed coordinator changes the verdict");
    assert!(!second.starts_with("central: OK: every property holds"), "{second}");

    // Compare with central-timeout on the same fault plan: two runs side by side.
    page.eval("(document.getElementById('compare').checked = true, document.getElementById('algo2').value = 'central-timeout', 0)");
    page.click("#run");
    page.wait_for("document.body.getAttribute('data-runs') === '3'", limit, "the comparison");
    assert_eq!(page.count(".run"), 2);
    assert_eq!(page.count(".run a[download]"), 8, "JSON, trace, HTML and repro of each run");

    // Bad input: the CLI's own words, in the page.
    page.assert_no_errors("the playground");
    page.eval("(document.getElementById('loss').value = '1.5', 0)");
    page.click("#run");
    let t0 = std::time::Instant::now();
    while page.eval("document.body.getAttribute('data-runs') === '4'") != serde_json::json!(true) {
        assert!(t0.elapsed() < limit, "the refused run");
        std::thread::sleep(Duration::from_millis(20));
    }
    let error = page.text("#error");
    assert!(error.contains("--loss 1.5") && error.contains("between 0 and 1"), "{error}");
    // The browser logs the 400 answers themselves (one per algorithm compared), nothing else.
    let logged = std::mem::take(&mut *page.errors.lock().unwrap());
    assert!(logged.iter().all(|e| e.contains("status of 400") && e.contains("/run")), "{logged:?}");
}

#[test]
fn every_algorithm_runs_in_the_playground() {
    let server = Server::start();
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(120)))
        .build()
        .into();
    for algo in algorithms() {
        let body = serde_json::json!({ "args": ["--algo", algo] }).to_string();
        let mut res = agent
            .post(&format!("{}run", server.url))
            .header("content-type", "application/json")
            .send(body.as_str())
            .expect("the server answers");
        let status = res.status().as_u16();
        let text = res.body_mut().with_config().limit(64 << 20).read_to_string().expect("a body");
        assert_eq!(status, 200, "{algo}: {text}");
        let v: serde_json::Value = serde_json::from_str(&text).expect("a JSON answer");
        assert_eq!(v["exit"], 0, "{algo}: {}", v["verdict"]);
        assert!(v["html"].as_str().unwrap().contains("run-data"), "{algo}: a viewer page");
        assert!(v["repro"].as_str().unwrap().starts_with(&format!("ringleader sim --algo {algo}")));
    }
}
