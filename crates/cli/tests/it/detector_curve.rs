//! `ringleader detector-curve`: under a heavy-tailed latency with paused processes, longer
//! timeouts (or higher Φ) make fewer false suspicions and slower detections, and the command
//! picks the value with the smallest expected cost C·mistakes + E·waiting.

use std::process::Command;

fn curve(args: &[&str]) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_ringleader"))
        .arg("detector-curve")
        .args(["--nodes", "4", "--duration", "20s", "--seed", "7", "--json"])
        .args(args)
        .output()
        .expect("ringleader runs");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

fn column(c: &serde_json::Value, key: &str) -> Vec<f64> {
    c["rows"].as_array().unwrap().iter().map(|r| r[key].as_f64().unwrap()).collect()
}

#[test]
fn heartbeat_false_suspicions_fall_and_detection_time_grows_with_the_timeout() {
    let c = curve(&["--values", "5ms,20ms,80ms,320ms"]);
    let fs = column(&c, "false_suspicions");
    let det = column(&c, "detection_mean_ms");
    assert!(fs.windows(2).all(|w| w[1] <= w[0]), "false suspicions {fs:?}");
    assert!(fs[0] > 10.0 * fs[3].max(1.0), "the heavy tail must hurt short timeouts: {fs:?}");
    assert!(det.windows(2).all(|w| w[1] > w[0]), "detection {det:?}");
    assert!(c["pauses"].as_u64().unwrap() > 0 && c["crashes"].as_u64().unwrap() > 0);
    // Every crash is detected by every live monitor at every value.
    assert!(column(&c, "missed").iter().all(|&m| m == 0.0));
}

#[test]
fn phi_accrual_false_suspicions_fall_as_the_threshold_grows() {
    let c = curve(&["--algo", "phi-accrual", "--values", "1,4,16"]);
    let fs = column(&c, "false_suspicions");
    assert!(fs.windows(2).all(|w| w[1] < w[0]), "false suspicions {fs:?}");
}

#[test]
fn the_chosen_value_minimises_the_stated_cost() {
    for (c_cost, e_cost) in [("1", "10"), ("100", "1"), ("0", "1")] {
        let c = curve(&["--values", "5ms,20ms,80ms,320ms", "--mistake-cost", c_cost, "--wait-cost", e_cost]);
        let (cm, ew): (f64, f64) = (c_cost.parse().unwrap(), e_cost.parse().unwrap());
        let rows = c["rows"].as_array().unwrap();
        let mut best = (f64::INFINITY, String::new());
        for r in rows {
            let cost = cm * r["false_suspicions"].as_f64().unwrap() + ew * r["waiting_s"].as_f64().unwrap();
            assert!((cost - r["cost"].as_f64().unwrap()).abs() < 1e-9);
            if cost < best.0 {
                best = (cost, r["value"].as_str().unwrap().to_string());
            }
        }
        assert_eq!(c["best"], best.1.as_str(), "C = {c_cost}, E = {e_cost}");
    }
    // Mistakes free: the shortest timeout wins; mistakes dear: a long one.
    assert_eq!(curve(&["--values", "5ms,20ms,80ms,320ms", "--mistake-cost", "0"])["best"], "5ms");
    assert_eq!(
        curve(&["--values", "5ms,20ms,80ms,320ms", "--mistake-cost", "1000", "--wait-cost", "1"])["best"],
        "320ms"
    );
}

#[test]
fn the_curve_is_deterministic_and_bad_input_is_refused() {
    let strip = |mut v: serde_json::Value| {
        v.as_object_mut().unwrap().remove("wall_seconds");
        v
    };
    assert_eq!(strip(curve(&["--values", "20ms"])), strip(curve(&["--values", "20ms"])));
    let out = Command::new(env!("CARGO_BIN_EXE_ringleader"))
        .args(["detector-curve", "--algo", "phi-accrual", "--values", "1,zero"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("zero") && err.contains("threshold"), "{err}");
}

/// `detector-curve --html FILE`: three SVG plots (detection time, false suspicions, cost)
/// against the swept timeout, then the table.
#[test]
fn the_html_page_plots_detection_time_mistakes_and_cost() {
    let file = std::env::temp_dir().join(format!("ringleader-curve-{}.html", std::process::id()));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ringleader"))
        .args([
            "detector-curve",
            "--nodes",
            "4",
            "--duration",
            "20s",
            "--seed",
            "7",
            "--values",
            "5ms,20ms,80ms",
        ])
        .arg("--html")
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let page = std::fs::read_to_string(&file).unwrap();
    assert_eq!(page.matches("<svg").count(), 3);
    for text in ["detection time of a crash", "false suspicions", "timeout T + D (ms)", "<pre>"] {
        assert!(page.contains(text), "{text}");
    }
    let _ = std::fs::remove_file(&file);
}
