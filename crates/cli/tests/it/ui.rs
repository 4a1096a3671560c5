//! `ringleader ui` in a real browser: the playground lists every algorithm, runs one, takes a
//! crash from a click on a lifeline, runs again and shows the crash mark and the changed
//! verdict; a band dragged with the mouse across lifelines becomes a partition of the next run;
//! bad input shows the CLI's words. Over plain HTTP, every algorithm of `ringleader list` runs
//! with its defaults.
//!
//! Waits are bounded polls on flags the page sets (`data-algorithms`, `data-runs`), never fixed
//! sleeps.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::browser::Page;
use headless_chrome::protocol::cdp::Input;

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
    page.wait_for("document.body.getAttribute('data-story') === 'central'", limit, "central's story");

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

/// One mouse event of the left button at `(x, y)` (the page's client coordinates), sent as the
/// DevTools protocol's input, so the browser makes the DOM events itself (and the click that
/// follows a press and release).
fn mouse(page: &Page, kind: Input::DispatchMouseEventTypeOption, (x, y): (f64, f64)) {
    let pressed = !matches!(kind, Input::DispatchMouseEventTypeOption::MouseReleased);
    page.tab
        .call_method(Input::DispatchMouseEvent {
            Type: kind,
            x,
            y,
            modifiers: None,
            timestamp: None,
            button: Some(Input::MouseButton::Left),
            buttons: Some(if pressed { 1 } else { 0 }),
            click_count: Some(1),
            force: None,
            tangential_pressure: None,
            tilt_x: None,
            tilt_y: None,
            twist: None,
            delta_x: None,
            delta_y: None,
            pointer_Type: None,
        })
        .expect("the browser takes the mouse event");
}

#[test]
fn dragging_a_band_across_lifelines_adds_a_partition() {
    use Input::DispatchMouseEventTypeOption::{MouseMoved, MousePressed, MouseReleased};
    let server = Server::start();
    let page = Page::new();
    page.visit(&server.url);
    let limit = Duration::from_secs(60);
    page.wait_for("document.body.getAttribute('data-story') === 'central'", limit, "central's story");
    page.eval("(document.getElementById('algo').value = 'central', document.getElementById('nodes').value = '3', 0)");
    page.click("#run");
    page.wait_for("document.body.getAttribute('data-runs') === '1'", limit, "the first run");
    let frame = "document.querySelector('.run iframe').contentWindow";
    page.wait_for(&format!("!!{frame}.ringleaderViewer"), limit, "the viewer in its frame");
    assert_eq!(
        page.eval(&format!("{frame}.document.querySelectorAll('.partition-band').length")),
        serde_json::json!(0)
    );

    // The viewer opens at the run's end; the drag starts from its first rows.
    page.eval(&format!("{frame}.ringleaderViewer.go(0)"));
    // Where a lifeline's row is in the playground's own coordinates: the frame's offset plus the
    // point inside the frame.
    let point = |col: u32, row: u32| -> (f64, f64) {
        let p = page.eval(&format!(
            "(function () {{ var f = document.querySelector('.run iframe').getBoundingClientRect();              var p = {frame}.ringleaderViewer.point({col}, {row}); return [f.left + p.x, f.top + p.y]; }})()"
        ));
        let (x, y) = (p[0].as_f64().unwrap(), p[1].as_f64().unwrap());
        let height = page.eval("window.innerHeight").as_f64().unwrap();
        assert!(y > 0.0 && y < height, "row {row} is on screen: {y} of {height}");
        (x, y)
    };
    let rows = page.eval(&format!("{frame}.ringleaderViewer.rows")).as_u64().unwrap();
    assert!(rows > 6, "the run has rows to drag over: {rows}");
    // Press on P1's lifeline (uid 2) at row 1, drag to P2's (uid 3) at row 6, release: nodes 2
    // and 3 cut off from the coordinator (uid 1) from row 1's time to row 6's.
    let (start, middle, end) = (point(1, 1), point(2, 3), point(2, 6));
    mouse(&page, MouseMoved, start);
    mouse(&page, MousePressed, start);
    mouse(&page, MouseMoved, middle);
    assert_eq!(
        page.eval(&format!("{frame}.document.querySelectorAll('#drag-band').length")),
        serde_json::json!(1),
        "the band is drawn while dragging"
    );
    mouse(&page, MouseMoved, end);
    mouse(&page, MouseReleased, end);
    page.wait_for("document.body.getAttribute('data-runs') === '2'", limit, "the run with the partition");

    // One fault, in the partition field's own notation; the click that ended the drag added no
    // crash.
    assert_eq!(page.count("#faults .fault"), 1, "{}", page.text("#faults"));
    let fault = page.text("#faults .fault");
    let value = fault
        .strip_prefix("partition ")
        .and_then(|f| f.strip_suffix('×'))
        .unwrap_or_else(|| panic!("{fault}"));
    assert!(value.starts_with("2,3|1@") && value.contains("ms.."), "{value}");
    // The run carries it: the repro line has the flag, the trace the cut, the diagram the band.
    let repro = page.text(".run .repro");
    assert!(repro.contains("--partition"), "{repro}");
    page.wait_for(&format!("!!{frame}.ringleaderViewer"), limit, "the second viewer");
    let cut = page.eval(&format!(
        "Array.prototype.map.call({frame}.document.querySelectorAll('.partition-label'), function (t) {{ return t.textContent; }})"
    ));
    assert!(cut.to_string().contains("2,3|1@"), "the band is labelled with the cut: {cut}");
    assert!(
        page.eval(&format!("{frame}.document.querySelectorAll('.partition-band:not(.drag-band)').length"))
            .as_u64()
            .unwrap()
            >= 1,
        "the partition band is drawn"
    );

    // It is removed like any fault: × and the chip is gone.
    page.click("#faults .fault button");
    assert_eq!(page.count("#faults .fault"), 0);
    page.assert_no_errors("the drag");
}

/// Choosing an algorithm loads its story (settings as placeholders, faults as chips, parameters as
/// its own flags); a comparison runs the second algorithm of the same family on exactly the same
/// settings and faults, with only its own parameters; removing a chip runs again without it.
#[test]
fn a_comparison_runs_both_algorithms_on_one_story_and_one_fault_plan() {
    let server = Server::start();
    let page = Page::new();
    page.visit(&server.url);
    let limit = Duration::from_secs(60);
    page.wait_for("document.body.getAttribute('data-story') === 'central'", limit, "central's story");
    page.eval("(function (s) { s.value = 'central-timeout'; s.dispatchEvent(new Event('change')); return 0; })(document.getElementById('algo'))");
    page.wait_for(
        "document.body.getAttribute('data-story') === 'central-timeout'",
        limit,
        "central-timeout's story",
    );
    assert_eq!(page.text("#faults .fault"), "pause 2@2500us..100ms×", "the story's pause is a chip");
    assert_eq!(page.eval("document.getElementById('own').value"), serde_json::json!("--param timeout=10ms"));
    assert_eq!(page.eval("document.getElementById('nodes').placeholder"), serde_json::json!("3"));
    // The second algorithm is one of the same family.
    let others = page.eval("Array.prototype.map.call(document.getElementById('algo2').options, function (o) { return o.value; })");
    let others: Vec<&str> = others.as_array().unwrap().iter().map(|o| o.as_str().unwrap()).collect();
    assert!(
        others.contains(&"central") && others.contains(&"ricart-agrawala") && !others.contains(&"bully"),
        "{others:?}"
    );
    page.eval("(function (s) { s.value = 'central'; s.dispatchEvent(new Event('change')); document.getElementById('compare').checked = true; return 0; })(document.getElementById('algo2'))");
    page.wait_for("document.getElementById('own2').value === ''", limit, "central's own flags");
    page.click("#run");
    page.wait_for("document.body.getAttribute('data-runs') === '1'", limit, "the comparison");
    let repros = || -> Vec<String> {
        let r = page.eval("Array.prototype.map.call(document.querySelectorAll('.run .repro'), function (e) { return e.textContent; })");
        r.as_array().unwrap().iter().map(|x| x.as_str().unwrap().to_string()).collect()
    };
    let both = repros();
    assert_eq!(both.len(), 2);
    let shared = "--nodes 3 --seed 1 --ids ascending --pause 2@2500us..100ms --workload saturated --entries 2 --hold 5ms --requesters 2,3";
    assert_eq!(
        both[0],
        format!("ringleader sim --algo central-timeout {shared} --param timeout=10ms --expect safety")
    );
    assert_eq!(
        both[1],
        format!("ringleader sim --algo central {shared}"),
        "the same settings and faults, no other story"
    );
    let verdicts = page.eval("Array.prototype.map.call(document.querySelectorAll('.run .verdict'), function (e) { return e.textContent; })");
    assert!(
        verdicts[0].as_str().unwrap().starts_with("central-timeout: OK: the expected violations were found"),
        "{verdicts}"
    );
    assert!(verdicts[1].as_str().unwrap().starts_with("central: OK: every property holds"), "{verdicts}");
    // × on the story's pause runs both again without it, and without the story's expectation.
    page.click("#faults .fault button");
    page.wait_for("document.body.getAttribute('data-runs') === '2'", limit, "the run without the pause");
    let again = repros();
    assert!(again.iter().all(|r| !r.contains("--pause") && !r.contains("--expect")), "{again:?}");
    assert!(again[0].contains("--param timeout=10ms") && !again[1].contains("--param"), "{again:?}");
    page.assert_no_errors("the comparison");
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

/// You are the scheduler: central-timeout's two holders found by hand in seven clicks (both ask,
/// both requests arrive, the first is granted, the coordinator's holder-silent timer fires, the
/// second grant arrives), back and forward, then "find a violation from here" from the start,
/// which plays a shortest path to a violation; bad bounds are the CLI's one line.
#[test]
fn explore_finds_central_timeout_s_two_holders_by_hand_and_by_search() {
    let server = Server::start();
    let page = Page::new();
    page.visit(&format!("{}explore", server.url));
    let limit = Duration::from_secs(60);
    let settle = |steps: usize, what: &str| {
        page.wait_for(
            &format!("document.body.getAttribute('data-busy') === '0' && document.body.getAttribute('data-steps') === '{steps}'"),
            limit,
            what,
        )
    };
    settle(0, "the initial state");
    assert_eq!(page.eval("document.getElementById('algo').value"), serde_json::json!("central-timeout"));
    for (k, text) in crate::browser::TWO_HOLDERS_BY_HAND.iter().enumerate() {
        page.click_text("#enabled button", text);
        settle(k + 1, text);
    }
    assert_eq!(page.eval("document.body.getAttribute('data-violated')"), serde_json::json!("safety"));
    assert!(page.text("#status").starts_with("safety violated: "), "{}", page.text("#status"));
    let frame = "document.querySelector('#frame iframe').contentWindow";
    page.wait_for(&format!("!!{frame}.ringleaderViewer"), limit, "the viewer of the path");
    assert_eq!(
        page.eval(&format!("{frame}.document.querySelectorAll('#violation').length")),
        serde_json::json!(1)
    );
    assert!(page.eval("location.hash").as_str().unwrap().contains("path="), "the address keeps the path");
    // Back undoes the last grant: no violation; forward redoes it.
    page.click("#back");
    settle(6, "back");
    assert_eq!(page.eval("document.body.getAttribute('data-violated')"), serde_json::json!(""));
    page.click("#forward");
    settle(7, "forward");
    assert_eq!(page.eval("document.body.getAttribute('data-violated')"), serde_json::json!("safety"));
    // From the start, the search finds a path to a violation no longer than the hand-made one.
    page.click("#start");
    settle(0, "start over");
    page.click("#find");
    page.wait_for("document.body.getAttribute('data-found') !== null && document.body.getAttribute('data-busy') === '0'", limit, "the search");
    let found = page.eval("+document.body.getAttribute('data-found')").as_u64().unwrap();
    assert!((1..=7).contains(&found), "{found}");
    assert_eq!(page.eval("document.body.getAttribute('data-violated')"), serde_json::json!("safety"));
    page.assert_no_errors("explore");
    // Bounds the checker refuses: the CLI's words.
    page.eval("(function (e) { e.value = '0'; e.dispatchEvent(new Event('change')); return 0; })(document.getElementById('nodes'))");
    // The refused request is logged by the browser itself ("Failed to load resource: … 400"),
    // whenever it arrives: that one log is expected, any other error still fails.
    page.wait_for_allowing(
        "document.getElementById('error').textContent !== ''",
        limit,
        "the refusal",
        |e| e.contains("status of 400") && e.contains("/explore"),
    );
    let error = page.text("#error");
    assert!(error.contains("--nodes 0: the model checker explores 1 to 16 nodes"), "{error}");
}

/// A `check --html` page hands its counterexample to the explore page: the link opens
/// `/explore` at the end of the path, where the same violation stands and the steps enabled
/// there are listed.
#[test]
fn a_check_page_links_to_exploring_its_counterexample_by_hand() {
    let dir = std::env::temp_dir().join(format!("ringleader-ui-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("ce.html");
    let out = Command::new(env!("CARGO_BIN_EXE_ringleader"))
        .args([
            "check",
            "--algo",
            "central-timeout",
            "--nodes",
            "3",
            "--expect",
            "safety",
            "--expect",
            "fencing",
            "--html",
        ])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let page = Page::new();
    page.open(&file);
    let link = page.eval("document.getElementById('explore-link').getAttribute('href')");
    let link = link.as_str().expect("the page links to the explorer");
    let fragment = link.strip_prefix("http://127.0.0.1:8080/explore#").expect(link);
    assert!(fragment.contains("algo=central-timeout") && fragment.contains("&path="), "{fragment}");
    let server = Server::start();
    page.visit(&format!("{}explore#{fragment}", server.url));
    let limit = Duration::from_secs(60);
    page.wait_for(
        "document.body.getAttribute('data-busy') === '0' && document.body.getAttribute('data-steps') !== null",
        limit,
        "the path replayed",
    );
    let violated = page.eval("document.body.getAttribute('data-violated')");
    assert!(violated.as_str().unwrap().split(',').any(|p| p == "safety"), "{violated}");
    assert_eq!(
        page.eval("+document.body.getAttribute('data-steps')"),
        serde_json::json!(7),
        "the counterexample's 7 steps"
    );
    page.assert_no_errors("the explorer from a check page");
    let _ = std::fs::remove_dir_all(&dir);
}
