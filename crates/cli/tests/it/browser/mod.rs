//! A headless Chromium driven over the DevTools protocol, shared by the browser tests
//! (`visual.rs`: saved run pages; `ui.rs`: the playground).
//!
//! `headless_chrome` is a maintained, synchronous crate (no async runtime in the tests), used
//! without its browser download (`default-features = false`), so it runs the machine's own
//! Chromium (`chromium`, `chromium-browser`, or the path in `RINGLEADER_BROWSER`;
//! `scripts/test.sh` installs Debian's `chromium`). Waits are bounded polls on flags the pages
//! set themselves, never fixed sleeps.

#![allow(dead_code)] // each test crate uses its own part of the helpers

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use headless_chrome::protocol::cdp::types::Event;
use headless_chrome::{Browser, LaunchOptions, Tab};

pub fn browser_path() -> PathBuf {
    if let Ok(b) = std::env::var("RINGLEADER_BROWSER") {
        return b.into();
    }
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        if let Ok(o) = Command::new("sh").args(["-c", &format!("command -v {name}")]).output()
            && o.status.success()
        {
            return String::from_utf8_lossy(&o.stdout).trim().into();
        }
    }
    panic!(
        "no Chromium found: this test drives a real browser. Run scripts/test.sh (it installs \
         Debian's chromium), or `apt-get install chromium`, or set RINGLEADER_BROWSER"
    );
}

/// Central-timeout's two holders on 3 nodes, by hand: the explorer's steps to click, in order
/// (both requesters ask, both requests arrive, P1 is granted, the coordinator's holder-silent
/// timer fires, the second grant arrives).
pub const TWO_HOLDERS_BY_HAND: [&str; 7] = [
    "P1: the application asks",
    "P2: the application asks",
    "deliver request P1 → P0",
    "deliver request P2 → P0",
    "deliver grant P0 → P1",
    "P0: timer HolderSilent",
    "deliver grant P0 → P2",
];

/// A headless browser with one tab that records every console error and uncaught exception.
pub struct Page {
    _browser: Browser,
    pub tab: Arc<Tab>,
    pub errors: Arc<Mutex<Vec<String>>>,
}

impl Page {
    pub fn new() -> Page {
        let options = LaunchOptions::default_builder()
            .path(Some(browser_path()))
            .sandbox(false)
            .window_size(Some((1400, 900)))
            .idle_browser_timeout(Duration::from_secs(600))
            .build()
            .expect("launch options");
        let browser = Browser::new(options).expect("Chromium starts");
        let tab = browser.new_tab().expect("a tab");
        tab.set_default_timeout(Duration::from_secs(60));
        tab.enable_runtime().expect("runtime domain");
        tab.enable_log().expect("log domain");
        let errors = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&errors);
        tab.add_event_listener(Arc::new(move |event: &Event| {
            let text = match event {
                Event::RuntimeExceptionThrown(e) => {
                    Some(format!("exception: {:?}", e.params.exception_details))
                }
                Event::RuntimeConsoleAPICalled(e) if format!("{:?}", e.params.Type) == "Error" => {
                    Some(format!("console.error: {:?}", e.params.args))
                }
                Event::LogEntryAdded(e) if format!("{:?}", e.params.entry.level) == "Error" => {
                    Some(format!("log: {} {:?}", e.params.entry.text, e.params.entry.url))
                }
                _ => None,
            };
            if let Some(t) = text {
                sink.lock().unwrap().push(t);
            }
        }))
        .expect("listener");
        Page { _browser: browser, tab, errors }
    }

    /// Opens a saved page and waits (bounded) until the viewer has drawn it.
    pub fn open(&self, file: &Path) {
        let url = format!("file://{}", file.canonicalize().expect("the page exists").display());
        // The previous page's flag must not count for this one.
        self.eval("document.body && document.body.removeAttribute('data-ready')");
        self.tab.navigate_to(&url).expect("navigates");
        self.tab.wait_until_navigated().expect("loads");
        let t0 = Instant::now();
        while self.eval("document.body && document.body.getAttribute('data-ready')") != serde_json::json!("1")
        {
            let errors = self.errors.lock().unwrap().clone();
            assert!(errors.is_empty(), "{}: console errors while loading: {errors:?}", file.display());
            assert!(
                t0.elapsed() < Duration::from_secs(60),
                "{}: the viewer never finished drawing",
                file.display()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn eval(&self, js: &str) -> serde_json::Value {
        let wrapped = format!("JSON.stringify((function(){{ return ({js}); }})())");
        let v = self.tab.evaluate(&wrapped, false).expect("evaluates");
        match v.value {
            Some(serde_json::Value::String(s)) => serde_json::from_str(&s).unwrap_or(serde_json::Value::Null),
            _ => serde_json::Value::Null,
        }
    }

    pub fn count(&self, selector: &str) -> u64 {
        self.eval(&format!("document.querySelectorAll({selector:?}).length")).as_u64().expect("a count")
    }

    pub fn text(&self, selector: &str) -> String {
        self.eval(&format!("(document.querySelector({selector:?}) || {{}}).textContent || ''"))
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    pub fn click(&self, selector: &str) {
        self.eval(&format!("document.querySelector({selector:?}).click()"));
    }

    /// Clicks the first element of `selector` whose text contains `text`; panics naming the
    /// texts there were when none does.
    pub fn click_text(&self, selector: &str, text: &str) {
        let clicked = self.eval(&format!(
            "(function () {{ var all = document.querySelectorAll({selector:?});
               var b = Array.prototype.find.call(all, function (b) {{ return b.textContent.indexOf({text:?}) >= 0; }});
               if (!b) return Array.prototype.map.call(all, function (b) {{ return b.textContent; }});
               b.click(); return true; }})()"
        ));
        assert_eq!(clicked, serde_json::json!(true), "no {text:?} among {clicked}");
    }

    pub fn assert_no_errors(&self, what: &str) {
        let errors = self.errors.lock().unwrap().clone();
        assert!(errors.is_empty(), "{what}: console errors: {errors:?}");
    }

    /// Navigates to `url` (a page served over HTTP) and waits for the load.
    pub fn visit(&self, url: &str) {
        self.tab.navigate_to(url).expect("navigates");
        self.tab.wait_until_navigated().expect("loads");
    }

    /// Polls `js` until it is true, for at most `limit`; fails with `what` otherwise.
    pub fn wait_for(&self, js: &str, limit: Duration, what: &str) {
        self.wait_for_allowing(js, limit, what, |_| false);
    }

    /// [`Page::wait_for`], where console errors that `expected` accepts (e.g. the browser's own
    /// log of a request the page makes to be refused) are not failures; they are removed.
    pub fn wait_for_allowing(&self, js: &str, limit: Duration, what: &str, expected: impl Fn(&str) -> bool) {
        let t0 = Instant::now();
        loop {
            let done = self.eval(js) == serde_json::json!(true);
            let errors: Vec<String> = {
                let mut all = self.errors.lock().unwrap();
                all.retain(|e| !expected(e));
                all.clone()
            };
            assert!(errors.is_empty(), "{what}: console errors: {errors:?}");
            if done {
                return;
            }
            assert!(t0.elapsed() < limit, "{what}: not within {limit:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
