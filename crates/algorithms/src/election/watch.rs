//! Watching the coordinator: the heartbeat failure detector every election here shares.
//!
//! The textbook elections start "when a process notices that the coordinator is not
//! responding". This module is that noticing, written once for `bully`, `ring` and `majority`:
//!
//! - the coordinator sends a HEARTBEAT to the processes it leads every `period` (the
//!   [`WatchTimer::Beat`] timer);
//! - every other process keeps a [`WatchTimer::Silence`] deadline, pushed back whenever it
//!   hears its coordinator; when the deadline passes, the process suspects the coordinator and
//!   starts an election. A process that knows no coordinator at all keeps the same deadline, so
//!   an election also starts when nobody was told to initiate one.
//!
//! In a synchronous system (one-way delay at most `Ttrans`) two heartbeats arrive at most
//! `period + Ttrans` apart, so a deadline of `period + T` (T = 2·Ttrans + Tprocess, the bully's
//! timer) never suspects a live coordinator: the detector is *perfect*. A paused coordinator or a
//! partition breaks that promise — the detector then suspects a process that is only slow or
//! unreachable, which is where split brain comes from.
//!
//! Heartbeats are messages of each algorithm's own type whose [`Message::is_detection`] is
//! true, so reports count them apart and the textbook counts stay checkable. `heartbeat = 0`
//! switches detection off: elections then start only from `--initiators` and recoveries.
//!
//! [`Message::is_detection`]: ringleader_core::Message::is_detection

use ringleader_core::{Context, NodeId, Outbox, Time};

use crate::{ParamError, Setup};

/// The detector's two timers; an algorithm's timer type wraps them (`T: From<WatchTimer>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum WatchTimer {
    /// The coordinator's next heartbeat is due.
    Beat,
    /// The coordinator has been silent too long.
    Silence,
}

/// The heartbeat detector's configuration (the same for every node of a run).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Watch {
    /// Heartbeat period; 0 switches detection off.
    pub period: Time,
    /// How long a follower waits without hearing its coordinator before suspecting it.
    pub silence: Time,
    /// The deadline is `silence` plus a uniform draw in `[0, jitter)` (randomized election
    /// timeouts; 0 for a fixed deadline).
    pub jitter: Time,
}

impl Watch {
    /// Detection switched off.
    pub const OFF: Watch = Watch { period: 0, silence: 0, jitter: 0 };

    /// Reads `heartbeat` (the period, 0 = off) and the silence deadline `silence_key` from the
    /// parameters. `default_silence` computes the deadline's default from the period.
    pub fn configure(
        setup: &Setup,
        default_period: Time,
        silence_key: &str,
        default_silence: impl Fn(Time) -> Time,
        jitter: bool,
    ) -> Result<Watch, ParamError> {
        let period = setup.params.duration("heartbeat", default_period)?;
        let silence = setup.params.duration(silence_key, default_silence(period))?;
        if period == 0 {
            return Ok(Watch::OFF);
        }
        if silence <= period {
            return Err(ParamError::OutOfRange {
                key: silence_key.into(),
                reason: format!(
                    "must be longer than the heartbeat period ({period} ns), or every live \
                     coordinator is suspected"
                ),
            });
        }
        Ok(Watch { period, silence, jitter: if jitter { silence } else { 0 } })
    }

    /// True when heartbeats are on.
    pub fn enabled(&self) -> bool {
        self.period > 0
    }

    /// This node became the coordinator: start beating, stop watching.
    pub fn lead<M, T: From<WatchTimer>>(&self, out: &mut Outbox<M, T>) {
        if self.enabled() {
            out.cancel_timer(WatchTimer::Silence.into());
            out.set_timer(WatchTimer::Beat.into(), self.period);
        }
    }

    /// This node follows a coordinator (or waits for one): stop beating, (re)arm the deadline.
    /// Call it whenever the coordinator is heard from.
    pub fn follow<M, T: From<WatchTimer>>(&self, cx: &Context, out: &mut Outbox<M, T>) {
        self.follow_after(cx, 0, out);
    }

    /// As [`Watch::follow`], with `grace` added to this one deadline: the time an election
    /// under way may take before silence means it was lost (also used at start-up, when no
    /// coordinator is known yet).
    pub fn follow_after<M, T: From<WatchTimer>>(&self, cx: &Context, grace: Time, out: &mut Outbox<M, T>) {
        if self.enabled() {
            out.cancel_timer(WatchTimer::Beat.into());
            let extra = if self.jitter > 0 { cx.random % self.jitter } else { 0 };
            out.set_timer(WatchTimer::Silence.into(), self.silence + extra + grace);
        }
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
