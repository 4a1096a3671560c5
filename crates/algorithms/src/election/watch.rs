//! Watching the coordinator: where the elections meet the failure detectors.
//!
//! The textbook elections start "when a process notices that the coordinator is not
//! responding". This module is that noticing, written once for `bully`, `ring` and `majority`,
//! and it is the only place where an election touches a failure detector: the algorithms call
//! [`Watch::lead`], [`Watch::beat`], [`Watch::follow`] / [`Watch::follow_after`],
//! [`Watch::heard`] and [`Watch::suspects`], and never see which detector is behind them.
//!
//! - The coordinator sends a HEARTBEAT to the processes it leads every `period` (parameter
//!   `heartbeat`; the [`WatchTimer::Beat`] timer).
//! - Every other process holds a failure detector whose one peer is *its coordinator* — the
//!   one it follows, or the one it is waiting for while no coordinator is known or an election
//!   is under way. A HEARTBEAT from that coordinator feeds the detector ([`Watch::heard`]);
//!   anything else that means "start watching afresh" — start-up, a COORDINATOR announcing a
//!   new coordinator, an election begun, a vote granted — restarts the detector's silence clock
//!   without feeding it a sample ([`Watch::follow_after`]).
//! - After each of these the [`WatchTimer::Silence`] timer is armed for the silence after
//!   which *the detector* would suspect the coordinator, plus the caller's `grace` (the time an
//!   election under way may take before silence means it was lost) and, for `majority`, a
//!   random draw in `[0, that silence)` (Raft's randomized election timeout: the deadline is
//!   drawn in `[S, 2S)`).
//! - When the timer fires the detector is asked ([`Watch::suspects`]); only if it suspects the
//!   coordinator does the algorithm start an election. A process that knows no coordinator at
//!   all keeps the same deadline, so an election also starts when nobody was told to initiate
//!   one.
//!
//! ## Parameters: one switch, `detector`
//! - `detector` = `heartbeat` | `phi-accrual` | `none` turns detection on or off. Default:
//!   `none` for `bully` and `ring` (the textbook runs, whose elections start from
//!   `--initiators`), `heartbeat` for `majority` (Raft cannot work without it).
//! - `heartbeat`: the coordinator's heartbeat period; default 5·Ttrans, at least 0.5 ms
//!   (5 ms under the default 1 ms delay bound). Giving a period without `detector` means
//!   `detector=heartbeat` (and `heartbeat=0` means `detector=none`).
//! - `suspect_after` (bully, ring) / `election_timeout` (majority): the heartbeat detector's
//!   fixed silence; `phi`, `window`, `min_std`: φ-accrual's knobs.
//! - Contradictions are errors naming the parameter: a detector's setting with
//!   `detector=none`, `heartbeat=0` with a detector, one detector's setting with the other.
//!
//! These names are stable: real nodes (`ringleader node`, `cluster`) and scenario files use them.
//!
//! ## The two detectors
//! - `heartbeat`: [`HeartbeatDetector`], which suspects after a fixed silence T + D
//!   — here `suspect_after` (bully, ring; default `heartbeat` + the election's own T) or
//!   `election_timeout` (majority; default 3·`heartbeat`). In a synchronous system (one-way
//!   delay at most Ttrans) two heartbeats arrive at most `period + Ttrans` apart, so a deadline
//!   of `period + T` (T = 2·Ttrans + Tprocess, the bully's timer) never suspects a live
//!   coordinator: the detector is *perfect*.
//! - `phi-accrual`: [`PhiAccrualDetector`], which fits a normal distribution to the last W
//!   inter-arrival times of the coordinator's heartbeats and suspects when
//!   φ = −log10(1 − F(silence)) reaches Φ, i.e. after μ + z·σ of silence. It reads the knobs of
//!   the `phi-accrual` algorithm with the same names and defaults (`phi` 8, `window` 100,
//!   `min_std` period/10, [`Knobs`]). Before any interval is measured it assumes one equal to
//!   the period, so its first deadline is `period + z·min_std` (1.56·period at Φ = 8). The
//!   window is kept when the coordinator changes — every coordinator beats with the same
//!   period over the same network — and the time from a restart to the next heartbeat is not
//!   recorded as an interval. μ is floored at the period
//!   ([`PhiAccrualDetector::with_min_mean`]): a coordinator cannot beat faster than that on
//!   average, and without the floor the burst of deferred heartbeats a follower receives when
//!   it resumes from a pause drags its deadline below the period, where it suspects its live
//!   coordinator on every deadline (the election sweep found this livelock).
//!
//! `suspect_after` / `election_timeout` belong to the heartbeat detector and `phi`, `window`,
//! `min_std` to φ-accrual: giving one to the other detector is an error naming the detector it
//! belongs to, rather than a setting silently ignored.
//!
//! ## Why an enum and not a trait
//! [`Detector`] is an enum over the two detector structs. Process state must be
//! `Clone + Eq + Hash` (the model checker stores and compares states) and the detector is a
//! run-time parameter: with a trait, either every election would become generic over its
//! detector (`Bully<D>`, one registry entry per pair) or it would hold a trait object, which is
//! neither `Eq` nor `Hash`. Two variants and a `match` in four small methods keep the wiring
//! here and the detectors' logic in `crates/algorithms/src/detectors/`.
//!
//! ## The timer is the evidence
//! Both detectors only change their verdict when fed, and every feeding re-arms the timer at
//! the detector's deadline, so when the timer fires the detector's answer is "suspect" — unless
//! the clock disagrees with the timer: the model checker's clock always reads 0 (any armed timer
//! may fire at any moment) and a drifting simulated clock may convert a duration a nanosecond
//! short. The detector is therefore asked about `max(now, due)`, `due` being when the timer was
//! set to fire: a timer that fired is proof that its duration passed.
//!
//! ## What no detector fixes
//! A paused coordinator or a partition breaks every detector's promise: the followers suspect a
//! process that is only slow or unreachable, which is where split brain comes from. φ-accrual
//! adapts to jitter it has seen, not to a pause it has not; a small Φ suspects sooner and
//! mistakes more (docs/ELECTIONS.md measures both). The `central` mutex's coordinator failover is
//! a separate stand-in that probes (request/reply) instead of listening for heartbeats, and does
//! not use this module.
//!
//! Heartbeats are messages of each algorithm's own type whose [`Message::is_detection`] is
//! true, so reports count them apart and the textbook counts stay checkable. With
//! `detector=none` elections start only from `--initiators` and recoveries.
//!
//! [`Message::is_detection`]: ringleader_core::Message::is_detection

use ringleader_core::time::MILLISECOND;
use ringleader_core::{Context, NodeId, Outbox, Time};

use crate::detectors::heartbeat::HeartbeatDetector;
use crate::detectors::phi_accrual::{Knobs, PhiAccrualDetector};
use crate::{ParamError, Setup};

/// The detectors' one peer: the coordinator, whoever it is.
const COORDINATOR: NodeId = 0;

/// The detector's two timers; an algorithm's timer type wraps them (`T: From<WatchTimer>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
pub enum WatchTimer {
    /// The coordinator's next heartbeat is due.
    Beat,
    /// The detector's deadline: the coordinator may have been silent too long.
    Silence,
}

/// The failure detector a follower runs on its coordinator (parameter `detector`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Detector {
    /// `heartbeat`: suspect after a fixed silence (`suspect_after` / `election_timeout`).
    Heartbeat(HeartbeatDetector),
    /// `phi-accrual`: suspect when φ reaches Φ (`phi`, `window`, `min_std`).
    PhiAccrual(PhiAccrualDetector),
}

impl Detector {
    /// The values parameter `detector` takes.
    pub const NAMES: [&'static str; 2] = ["heartbeat", "phi-accrual"];

    /// The name parameter `detector` gives this detector.
    pub fn name(&self) -> &'static str {
        match self {
            Detector::Heartbeat(_) => Self::NAMES[0],
            Detector::PhiAccrual(_) => Self::NAMES[1],
        }
    }

    /// The silence after which the coordinator would be suspected, as the detector stands now.
    pub fn deadline(&self) -> Time {
        match self {
            Detector::Heartbeat(d) => d.timeout(),
            Detector::PhiAccrual(d) => d.suspicion_after(COORDINATOR),
        }
    }

    /// A HEARTBEAT from the coordinator arrived at local time `now`.
    fn heard(&mut self, now: Time) {
        match self {
            Detector::Heartbeat(d) => {
                d.heard(COORDINATOR, now);
            }
            Detector::PhiAccrual(d) => {
                d.heard(COORDINATOR, now);
            }
        }
    }

    /// The silence clock starts over at `now`, without a sample.
    fn restart(&mut self, now: Time) {
        match self {
            // A fixed timeout keeps no samples: arrival and restart are the same.
            Detector::Heartbeat(d) => {
                d.heard(COORDINATOR, now);
            }
            Detector::PhiAccrual(d) => {
                d.restart(COORDINATOR, now);
            }
        }
    }

    /// The verdict at local time `now`: true when the coordinator becomes suspected.
    fn suspects(&mut self, now: Time) -> bool {
        match self {
            Detector::Heartbeat(d) => d.silent(COORDINATOR, now),
            Detector::PhiAccrual(d) => d.check(COORDINATOR, now),
        }
    }
}

/// One process's watch over its coordinator: the heartbeat period (the same for every node of
/// a run) and this follower's own detector. Built once by [`Watch::configure`] and cloned into
/// every process.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Watch {
    /// Heartbeat period; 0 switches detection off.
    period: Time,
    /// Whether the deadline S is drawn in `[S, 2S)` (randomized election timeouts).
    jitter: bool,
    /// The detector watching the coordinator.
    detector: Detector,
    /// Local time at which the armed Silence timer is due.
    due: Time,
}

impl Watch {
    /// Detection switched off.
    fn off() -> Watch {
        Watch {
            period: 0,
            jitter: false,
            detector: Detector::Heartbeat(HeartbeatDetector::new(1, 0)),
            due: 0,
        }
    }

    /// Reads `detector` (`heartbeat`, `phi-accrual` or `none`; default `default_detector`) and
    /// `heartbeat` (the period, default 5·Ttrans, at least 0.5 ms); then, for the heartbeat detector,
    /// its silence deadline `silence_key` (default computed from the period by
    /// `default_silence`), or, for φ-accrual, `phi`, `window` and `min_std`. A period given
    /// without `detector` means `detector=heartbeat` (or `none` for a period of 0). Settings
    /// that contradict each other — a detector's setting with `detector=none`, a zero period
    /// with a detector, one detector's setting with the other detector — are an error.
    /// `jitter` draws every deadline S in `[S, 2S)`.
    pub fn configure(
        setup: &Setup,
        default_detector: &str,
        silence_key: &str,
        default_silence: impl Fn(Time) -> Time,
        jitter: bool,
    ) -> Result<Watch, ParamError> {
        let given = |key: &str| setup.params.values().contains_key(key);
        let period = setup.params.duration_or_off("heartbeat", default_period(setup))?;
        let implied = match (given("heartbeat"), period) {
            (false, _) => default_detector,
            (true, 0) => "none",
            (true, _) => "heartbeat",
        };
        let kind: String = setup.params.get("detector", implied.to_string())?;
        let contradiction = |key: &str, reason: String| ParamError::OutOfRange { key: key.into(), reason };
        match kind.trim() {
            "none" => {
                let settings = ["heartbeat", silence_key, "phi", "window", "min_std"];
                let on = |k: &&&str| given(k) && !(**k == "heartbeat" && period == 0);
                if given("detector")
                    && let Some(key) = settings.iter().find(on)
                {
                    return Err(contradiction(
                        key,
                        "contradicts detector=none (no failure detector runs); drop one of them".into(),
                    ));
                }
                return Ok(Watch::off());
            }
            "heartbeat" | "phi-accrual" if given("heartbeat") && period == 0 => {
                return Err(contradiction(
                    "heartbeat",
                    format!(
                        "0 switches detection off, which contradicts detector={}; give a positive \
                         period or detector=none",
                        kind.trim()
                    ),
                ));
            }
            _ => {}
        }
        let detector = match kind.trim() {
            "heartbeat" => {
                if let Some(key) = ["phi", "window", "min_std"].into_iter().find(|k| given(k)) {
                    return Err(ParamError::OutOfRange {
                        key: key.into(),
                        reason: format!(
                            "belongs to detector=phi-accrual; the heartbeat detector suspects after \
                             {silence_key}"
                        ),
                    });
                }
                let silence = setup.params.duration(silence_key, default_silence(period))?;
                if silence <= period {
                    return Err(ParamError::OutOfRange {
                        key: silence_key.into(),
                        reason: format!(
                            "must be longer than the heartbeat period ({period} ns), or every live \
                             coordinator is suspected"
                        ),
                    });
                }
                Detector::Heartbeat(HeartbeatDetector::new(1, silence))
            }
            "phi-accrual" => {
                if given(silence_key) {
                    return Err(ParamError::OutOfRange {
                        key: silence_key.into(),
                        reason: "belongs to detector=heartbeat; φ-accrual suspects when φ reaches \
                                 `phi` (with `window`, `min_std`)"
                            .into(),
                    });
                }
                let detector = Knobs::configure(setup, period)?.detector(1, period);
                Detector::PhiAccrual(detector.with_min_mean(period))
            }
            other => {
                return Err(ParamError::OutOfRange {
                    key: "detector".into(),
                    reason: format!("expected heartbeat, phi-accrual or none, got {other:?}"),
                });
            }
        };
        Ok(Watch { period, jitter, detector, due: 0 })
    }

    /// True when heartbeats are on.
    pub fn enabled(&self) -> bool {
        self.period > 0
    }

    /// The heartbeat period (0: detection off).
    pub fn period(&self) -> Time {
        self.period
    }

    /// The detector watching the coordinator.
    pub fn detector(&self) -> &Detector {
        &self.detector
    }

    /// This node became the coordinator: start beating, stop watching.
    pub fn lead<M, T: From<WatchTimer>>(&self, out: &mut Outbox<M, T>) {
        if self.enabled() {
            out.cancel_timer(WatchTimer::Silence.into());
            out.set_timer(WatchTimer::Beat.into(), self.period);
        }
    }

    /// This node follows a coordinator it has just learned of (or waits for one): stop
    /// beating, restart the detector's silence clock, (re)arm the deadline.
    pub fn follow<M, T: From<WatchTimer>>(&mut self, cx: &Context, out: &mut Outbox<M, T>) {
        self.follow_after(cx, 0, out);
    }

    /// As [`Watch::follow`], with `grace` added to this one deadline: the time an election
    /// under way may take before silence means it was lost (also used at start-up, when no
    /// coordinator is known yet).
    pub fn follow_after<M, T: From<WatchTimer>>(
        &mut self,
        cx: &Context,
        grace: Time,
        out: &mut Outbox<M, T>,
    ) {
        if self.enabled() {
            self.detector.restart(cx.now);
            self.arm(cx, grace, out);
        }
    }

    /// A HEARTBEAT from the coordinator this node follows arrived: feed the detector and re-arm
    /// the deadline it computes.
    pub fn heard<M, T: From<WatchTimer>>(&mut self, cx: &Context, out: &mut Outbox<M, T>) {
        if self.enabled() {
            self.detector.heard(cx.now);
            self.arm(cx, 0, out);
        }
    }

    fn arm<M, T: From<WatchTimer>>(&mut self, cx: &Context, grace: Time, out: &mut Outbox<M, T>) {
        out.cancel_timer(WatchTimer::Beat.into());
        let deadline = self.detector.deadline();
        let extra = if self.jitter && deadline > 0 { cx.random % deadline } else { 0 };
        let wait = deadline + extra + grace;
        self.due = cx.now.saturating_add(wait);
        out.set_timer(WatchTimer::Silence.into(), wait);
    }

    /// The Silence timer fired: does the detector suspect the coordinator? Start an election
    /// only if it does.
    pub fn suspects(&mut self, cx: &Context) -> bool {
        self.enabled() && self.detector.suspects(cx.now.max(self.due))
    }

    /// The Beat timer fired: send `heartbeat` to each of `followers` and re-arm.
    pub fn beat<M: Clone, T: From<WatchTimer>>(
        &self,
        followers: impl IntoIterator<Item = NodeId>,
        heartbeat: &M,
        out: &mut Outbox<M, T>,
    ) {
        if self.enabled() {
            out.send_all(followers, heartbeat);
            out.set_timer(WatchTimer::Beat.into(), self.period);
        }
    }
}

/// The heartbeat period when none is given: five delay bounds, at least 0.5 ms.
fn default_period(setup: &Setup) -> Time {
    (5 * setup.max_delay).max(MILLISECOND / 2)
}

#[cfg(test)]
mod tests {
    use ringleader_core::{Command, Topology};

    use super::*;
    use crate::Params;

    const MS: Time = MILLISECOND;

    fn watch(params: &[(&str, &str)], jitter: bool) -> Result<Watch, ParamError> {
        let uids = [1, 2];
        let topology = Topology::Complete { n: 2 };
        let params = Params::new(params.iter().map(|&(k, v)| (k.to_string(), v.to_string())).collect());
        let setup = Setup { uids: &uids, topology: &topology, params: &params, max_delay: MS, seed: 1 };
        Watch::configure(&setup, "none", "suspect_after", |p| p + 2 * MS, jitter)
    }

    /// Feeds `w` at local time `now` (`beat`: a heartbeat, else a restart) and returns how long
    /// the Silence timer was armed for.
    fn feed(w: &mut Watch, now: Time, random: u64, beat: bool) -> Time {
        let uids = [1, 2];
        let topology = Topology::Complete { n: 2 };
        let cx = Context { me: 0, uids: &uids, topology: &topology, now, random };
        let mut out: Outbox<(), WatchTimer> = Outbox::new();
        if beat {
            w.heard(&cx, &mut out)
        } else {
            w.follow(&cx, &mut out)
        }
        out.drain()
            .find_map(|a| match a {
                Command::SetTimer { timer: WatchTimer::Silence, after } => Some(after),
                _ => None,
            })
            .expect("a Silence timer")
    }

    fn fire(w: &mut Watch, now: Time) -> bool {
        let uids = [1, 2];
        let topology = Topology::Complete { n: 2 };
        w.suspects(&Context { me: 0, uids: &uids, topology: &topology, now, random: 0 })
    }

    #[test]
    fn the_heartbeat_detector_waits_suspect_after_and_jitter_draws_in_s_to_2s() {
        let mut w = watch(&[("heartbeat", "5ms")], false).unwrap();
        assert_eq!(w.detector().name(), "heartbeat");
        assert_eq!(feed(&mut w, 0, 3 * MS, true), 7 * MS);
        assert!(fire(&mut w, 7 * MS));
        let mut w = watch(&[("heartbeat", "5ms")], true).unwrap();
        assert_eq!(feed(&mut w, 0, 7 * MS + 3, false), 7 * MS + 3);
        assert_eq!(feed(&mut w, 0, 3 * MS, false), 10 * MS);
    }

    #[test]
    fn phi_accrual_deadline_follows_the_heartbeats_and_restarts_measure_no_interval() {
        let mut w =
            watch(&[("heartbeat", "10ms"), ("detector", "phi-accrual"), ("phi", "3")], false).unwrap();
        assert_eq!(w.detector().name(), "phi-accrual");
        // No interval yet: μ = the period, σ = min_std = 1 ms; z(3) = 3.0902.
        let prior = feed(&mut w, 0, 0, false);
        assert!(prior.abs_diff(13_090_200) < 2_000, "{prior}");
        // Heartbeats 8 and 12 ms apart: μ = 10 ms, σ = 2 ms.
        feed(&mut w, MS, 0, true);
        feed(&mut w, 9 * MS, 0, true);
        let after = feed(&mut w, 21 * MS, 0, true);
        assert!(after.abs_diff(16_180_400) < 4_000, "{after}");
        // A restart 1 ms later keeps the window; the next heartbeat ends no interval.
        assert_eq!(feed(&mut w, 22 * MS, 0, false), after);
        assert_eq!(feed(&mut w, 23 * MS, 0, true), after, "1 ms since the restart is no sample");
        // The timer is the evidence: the model checker's clock reads 0 when it fires.
        assert!(fire(&mut w, 0));
        assert!(!fire(&mut w, 0), "suspected once until heard again");
    }

    #[test]
    fn a_burst_of_heartbeats_does_not_pull_the_deadline_below_the_period() {
        // A follower back from a pause receives the deferred heartbeats at the same instant:
        // zero intervals. The mean stays floored at the period.
        let mut w = watch(&[("heartbeat", "5ms"), ("detector", "phi-accrual")], false).unwrap();
        let prior = feed(&mut w, 0, 0, false);
        feed(&mut w, 30 * MS, 0, true);
        feed(&mut w, 30 * MS, 0, true);
        assert_eq!(feed(&mut w, 30 * MS, 0, true), prior);
        assert!(prior > 5 * MS);
    }

    #[test]
    fn bad_values_name_the_key_and_what_is_allowed() {
        let err = |p: &[(&str, &str)]| watch(p, false).unwrap_err().to_string();
        assert_eq!(
            err(&[("heartbeat", "5ms"), ("detector", "swim")]),
            "parameter `detector`: expected heartbeat, phi-accrual or none, got \"swim\""
        );
        assert!(
            err(&[("heartbeat", "5ms"), ("window", "9")])
                .starts_with("parameter `window`: belongs to detector=phi-accrual")
        );
        assert!(
            err(&[("heartbeat", "5ms"), ("detector", "phi-accrual"), ("suspect_after", "9ms")])
                .starts_with("parameter `suspect_after`: belongs to detector=heartbeat")
        );
        assert!(
            err(&[("detector", "phi-accrual"), ("heartbeat", "0")])
                .contains("contradicts detector=phi-accrual")
        );
        assert!(
            err(&[("heartbeat", "5ms"), ("detector", "phi-accrual"), ("phi", "-1")]).contains("(0, 300]")
        );
        assert!(
            err(&[("heartbeat", "5ms"), ("suspect_after", "5ms")])
                .contains("longer than the heartbeat period")
        );
        assert!(!watch(&[], false).unwrap().enabled());
    }

    /// One switch turns detection on: `detector=heartbeat` alone runs the heartbeat detector
    /// at the default period (it used to be accepted and do nothing); contradictions are errors.
    #[test]
    fn detector_alone_turns_detection_on_and_contradictions_are_errors() {
        let w = watch(&[("detector", "heartbeat")], false).unwrap();
        assert!(w.enabled());
        assert_eq!((w.period(), w.detector().name()), (5 * MS, "heartbeat"));
        let w = watch(&[("detector", "phi-accrual")], false).unwrap();
        assert_eq!((w.period(), w.detector().name()), (5 * MS, "phi-accrual"));
        assert!(!watch(&[], false).unwrap().enabled(), "bully and ring: none by default");
        assert!(!watch(&[("detector", "none")], false).unwrap().enabled());
        assert!(!watch(&[("heartbeat", "0")], false).unwrap().enabled());
        assert!(watch(&[("heartbeat", "7ms")], false).unwrap().enabled(), "a period means heartbeat");
        let err = |p: &[(&str, &str)]| watch(p, false).unwrap_err().to_string();
        assert_eq!(
            err(&[("detector", "none"), ("heartbeat", "5ms")]),
            "parameter `heartbeat`: contradicts detector=none (no failure detector runs); drop one of them"
        );
        assert!(
            err(&[("detector", "none"), ("suspect_after", "9ms")]).starts_with("parameter `suspect_after`")
        );
        assert!(err(&[("detector", "heartbeat"), ("heartbeat", "0")]).starts_with(
            "parameter `heartbeat`: 0 switches detection off, which contradicts detector=heartbeat"
        ));
    }
}
