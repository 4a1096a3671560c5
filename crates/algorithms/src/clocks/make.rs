//! # The `make` story: skewed clocks skip a needed rebuild
//!
//! *The example that opens the clock-synchronization chapter of Tanenbaum & van Steen,
//! Distributed Systems (physical clocks: "when each machine has its own clock").*
//!
//! ## The story
//! `make` rebuilds `output.o` only when `output.c` is newer, comparing the two files'
//! modification times. On one machine that is sound. Here the programmer edits on one machine
//! (the *editor*, position 0) and the files live and compile on another (the *builder*,
//! position 1), each stamping with its own clock. The builder compiles and tells the programmer
//! (BUILT); a moment later (`think`, default 1 ms) the programmer edits `output.c` and saves it
//! to the builder (WRITE, carrying the edit's timestamp); the builder runs make. If the
//! editor's clock is behind the builder's by more than the think time plus a message delay, the
//! edit is stamped *earlier* than the object file: make skips the rebuild and the program mixes
//! old and new code — the textbook's `output.c` 2143 against `output.o` 2144.
//!
//! ## The rules
//! 1. At `compile_at` (default 1 s) the builder compiles: it stamps `output.o` and sends BUILT
//!    to the editor.
//! 2. `think` after BUILT the editor edits `output.c`, stamps it and sends WRITE(stamp).
//! 3. On WRITE the builder runs make: it compiles again when the source's stamp is newer than
//!    the object's, and skips otherwise.
//! 4. Stamps are local clock readings (`timestamps = "physical"`) or Lamport clock values
//!    (`timestamps = "lamport"`: every stamp ticks the clock, BUILT and WRITE carry it, a
//!    receive jumps past it).
//! 5. With `synchronize = true` the editor first asks the builder for its time (TIME_REQUEST,
//!    TIME_REPLY) and slews its clock by Cristian's estimate.
//!
//! ## The variants (parameter `timestamps`, and `synchronize`)
//! - `timestamps = "physical"` (default): file times are local clock readings. Under skewed
//!   clocks the rebuild is wrongly skipped (`scenarios/make-skewed-clocks.toml`).
//! - `timestamps = "lamport"`: file times are Lamport clock values; BUILT and WRITE carry the
//!   sender's clock. Since compile → BUILT → edit → WRITE → make, the edit's stamp is larger
//!   than the object's whatever the physical clocks say (`scenarios/make-lamport.toml`).
//! - `synchronize = true`: physical times, but the editor first synchronizes with the builder
//!   by one Cristian exchange (TIME_REQUEST, TIME_REPLY, correction slewed in). Once the
//!   correction is absorbed (it slews at 0.5 ms per second, so `compile_at` must leave time for
//!   it), the clocks agree within the estimate's error, far below the think time
//!   (`scenarios/make-synchronized.toml`).
//!
//! ```text
//!   builder: ──compile_at: compile, stamp object, BUILT──▶ waiting ──WRITE(stamp)──▶ make: stamp > object ? compile : skip
//!   editor:  [TIME_REQUEST ──TIME_REPLY──▶ adjust]  ──BUILT──▶ think ──▶ edit, stamp, WRITE(stamp)
//! ```
//!
//! ## Observation
//! `Touched { what, time }` with `what` = `compile`, `edit` or `skip` and the timestamp
//! recorded (for `skip`, the source's). The clock checker knows when each really happened and
//! judges `make_rebuilds`: make must not skip when the last edit came after the last compile.

use ringleader_core::time::{MILLISECOND, SECOND};
use ringleader_core::{Context, Event, Message, NodeId, Outbox, Process, Time, Touch};
use serde::{Deserialize, Serialize};

use super::remote_offset;
use crate::{Algorithm, Family, ParamError, Setup};

/// The editor's position.
pub const EDITOR: NodeId = 0;
/// The builder's position (it holds the files and runs make).
pub const BUILDER: NodeId = 1;

/// Messages of the `make` story.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Msg {
    /// The editor asks the builder's time (`synchronize` only).
    TimeRequest {
        /// The editor's clock at the send.
        t0: Time,
    },
    /// The builder's time.
    TimeReply {
        /// The request's `t0`.
        t0: Time,
        /// The builder's clock when answering.
        time: Time,
    },
    /// The builder compiled; `lamport` is its Lamport clock (0 under physical timestamps).
    Built {
        /// Sender's Lamport clock.
        lamport: u64,
    },
    /// The editor saves the source with modification time `mtime`.
    Write {
        /// The source's timestamp.
        mtime: Time,
        /// Sender's Lamport clock.
        lamport: u64,
    },
}

impl Message for Msg {
    const KINDS: &'static [&'static str] = &["time_request", "time_reply", "built", "write"];
    fn kind_index(&self) -> usize {
        match self {
            Msg::TimeRequest { .. } => 0,
            Msg::TimeReply { .. } => 1,
            Msg::Built { .. } => 2,
            Msg::Write { .. } => 3,
        }
    }
}

/// Timers of the `make` story.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
pub enum Timer {
    /// The builder compiles.
    Compile,
    /// The programmer edits.
    Edit,
}

/// How file times are stamped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Timestamps {
    /// Local clock readings.
    Physical,
    /// Lamport clock values.
    Lamport,
}

/// Validated configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Config {
    /// How file times are stamped.
    pub timestamps: Timestamps,
    /// Whether the editor synchronizes with the builder first.
    pub synchronize: bool,
    /// When the builder compiles (its local time after start).
    pub compile_at: Time,
    /// How long the programmer waits between BUILT and the edit.
    pub think: Time,
}

/// A node of the `make` story.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Make {
    me: NodeId,
    config: Config,
    lamport: u64,
    /// Builder: the object file's timestamp.
    object: Option<Time>,
}

type Out = Outbox<Msg, Timer>;

impl Make {
    /// A timestamp for a local event now.
    fn stamp(&mut self, cx: &Context) -> Time {
        match self.config.timestamps {
            Timestamps::Physical => cx.now,
            Timestamps::Lamport => {
                self.lamport += 1;
                self.lamport
            }
        }
    }

    /// Lamport's receive rule (a no-op under physical timestamps).
    fn receive(&mut self, lamport: u64) {
        if self.config.timestamps == Timestamps::Lamport {
            self.lamport = self.lamport.max(lamport) + 1;
        }
    }

    fn compile(&mut self, cx: &Context, out: &mut Out) {
        let time = self.stamp(cx);
        self.object = Some(time);
        out.emit(Event::Touched { what: Touch::Compile, time });
    }
}

impl Process for Make {
    type Msg = Msg;
    type Timer = Timer;

    fn on_start(&mut self, cx: &Context, out: &mut Out) {
        match self.me {
            BUILDER => out.set_timer(Timer::Compile, self.config.compile_at),
            EDITOR if self.config.synchronize => out.send(BUILDER, Msg::TimeRequest { t0: cx.now }),
            _ => {}
        }
    }

    fn on_message(&mut self, cx: &Context, from: NodeId, msg: Msg, out: &mut Out) {
        match msg {
            Msg::TimeRequest { t0 } => out.send(from, Msg::TimeReply { t0, time: cx.now }),
            Msg::TimeReply { t0, time } => {
                let delta = remote_offset(t0, time, cx.now);
                out.adjust_clock(delta);
                out.emit(Event::ClockAdjusted { delta });
            }
            Msg::Built { lamport } => {
                self.receive(lamport);
                out.set_timer(Timer::Edit, self.config.think);
            }
            Msg::Write { mtime, lamport } => {
                self.receive(lamport);
                // make: rebuild when the source is newer than the object.
                match self.object {
                    Some(object) if mtime <= object => {
                        out.emit(Event::Touched { what: Touch::Skip, time: mtime });
                    }
                    _ => self.compile(cx, out),
                }
            }
        }
    }

    fn on_timer(&mut self, cx: &Context, timer: Timer, out: &mut Out) {
        match timer {
            Timer::Compile => {
                self.compile(cx, out);
                out.send(EDITOR, Msg::Built { lamport: self.lamport });
            }
            Timer::Edit => {
                let mtime = self.stamp(cx);
                out.emit(Event::Touched { what: Touch::Edit, time: mtime });
                out.send(BUILDER, Msg::Write { mtime, lamport: self.lamport });
            }
        }
    }

    /// The story does not model crashes: files and clocks are stable, nothing is forgotten.
    fn on_recover(&mut self, _cx: &Context, _out: &mut Out) {}
}

impl Algorithm for Make {
    const NAME: &'static str = "make";
    const FAMILY: Family = Family::Clock;
    const SUMMARY: &'static str =
        "the textbook's make story: an edit stamped by a lagging clock looks older than the object file";
    /// One operation is one clock adjustment the checker sees.
    const OPERATION: crate::OperationUnit = crate::OperationUnit::checked("adjustment");
    type Config = Config;

    fn configure(setup: &Setup) -> Result<Config, ParamError> {
        if setup.uids.len() < 2 {
            return Err(ParamError::OutOfRange {
                key: "nodes".into(),
                reason: "the make story needs at least 2 nodes (editor at position 0, builder at 1; any other node only keeps a clock)".into(),
            });
        }
        let stamps: String = setup.params.get("timestamps", "physical".to_string())?;
        let timestamps = match stamps.as_str() {
            "physical" => Timestamps::Physical,
            "lamport" => Timestamps::Lamport,
            other => {
                return Err(ParamError::OutOfRange {
                    key: "timestamps".into(),
                    reason: format!("{other:?} is not one of physical, lamport"),
                });
            }
        };
        let synchronize: bool = setup.params.get("synchronize", false)?;
        let compile_at = setup.params.duration("compile_at", SECOND)?;
        let think = setup.params.duration("think", MILLISECOND)?;
        Ok(Config { timestamps, synchronize, compile_at, think })
    }

    fn new(me: NodeId, c: &Config, _setup: &Setup) -> Self {
        Make { me, config: *c, lamport: 0, object: None }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestSystem;
    use ringleader_core::harness::Harness;

    const MS: Time = MILLISECOND;

    fn node(me: NodeId, params: &[(&str, &str)]) -> Harness<Make> {
        params.iter().fold(TestSystem::new(2), |w, (k, v)| w.param(k, v)).node(me)
    }

    fn touched(what: Touch, time: Time) -> Event {
        Event::Touched { what, time }
    }

    /// Rule 1: at `compile_at` the builder compiles, stamps the object and sends BUILT.
    #[test]
    fn rule_1_the_builder_compiles_at_compile_at_and_reports_built() {
        let mut b = node(BUILDER, &[]);
        assert_eq!(b.start().set(), vec![(Timer::Compile, 1_000 * MS)]);
        b.at(1_000 * MS);
        let step = b.fire(Timer::Compile);
        assert_eq!(step.emitted(), vec![touched(Touch::Compile, 1_000 * MS)]);
        assert_eq!(step.sent(), vec![(EDITOR, Msg::Built { lamport: 0 })]);
        assert!(node(EDITOR, &[]).start().is_empty(), "the editor waits for BUILT");
    }

    /// Rule 2: `think` after BUILT the editor stamps its edit and sends WRITE.
    #[test]
    fn rule_2_the_editor_edits_think_after_built_and_writes() {
        let mut e = node(EDITOR, &[]);
        assert_eq!(e.deliver(BUILDER, Msg::Built { lamport: 0 }).set(), vec![(Timer::Edit, MS)]);
        e.at(998 * MS);
        let step = e.fire(Timer::Edit);
        assert_eq!(step.emitted(), vec![touched(Touch::Edit, 998 * MS)]);
        assert_eq!(step.sent(), vec![(BUILDER, Msg::Write { mtime: 998 * MS, lamport: 0 })]);
    }

    /// Rule 3: make rebuilds a source newer than the object and skips an older one.
    #[test]
    fn rule_3_make_compiles_only_a_newer_source() {
        let mut b = node(BUILDER, &[]);
        b.start();
        b.at(1_000 * MS).fire(Timer::Compile);
        b.at(1_002 * MS);
        assert_eq!(
            b.deliver(EDITOR, Msg::Write { mtime: 999 * MS, lamport: 0 }).emitted(),
            vec![touched(Touch::Skip, 999 * MS)]
        );
        assert_eq!(
            b.deliver(EDITOR, Msg::Write { mtime: 1_001 * MS, lamport: 0 }).emitted(),
            vec![touched(Touch::Compile, 1_002 * MS)]
        );
    }

    /// Rule 4: Lamport stamps tick per stamp, travel on BUILT and WRITE and jump past a receive.
    #[test]
    fn rule_4_lamport_stamps_order_the_edit_after_the_compile() {
        let lamport = [("timestamps", "lamport")];
        let mut b = node(BUILDER, &lamport);
        b.start();
        let step = b.fire(Timer::Compile);
        assert_eq!(step.emitted(), vec![touched(Touch::Compile, 1)]);
        assert_eq!(step.sent(), vec![(EDITOR, Msg::Built { lamport: 1 })]);
        let mut e = node(EDITOR, &lamport);
        e.deliver(BUILDER, Msg::Built { lamport: 1 });
        let step = e.fire(Timer::Edit);
        assert_eq!(step.sent(), vec![(BUILDER, Msg::Write { mtime: 3, lamport: 3 })]);
        assert_eq!(
            b.deliver(EDITOR, Msg::Write { mtime: 3, lamport: 3 }).emitted(),
            vec![touched(Touch::Compile, 5)]
        );
    }

    /// Rule 5: with `synchronize` the editor asks the builder's time first and slews by
    /// Cristian's estimate.
    #[test]
    fn rule_5_synchronize_makes_one_cristian_exchange_first() {
        let mut e = node(EDITOR, &[("synchronize", "true")]);
        e.at(10 * MS);
        assert_eq!(e.start().sent(), vec![(BUILDER, Msg::TimeRequest { t0: 10 * MS })]);
        let mut b = node(BUILDER, &[]);
        b.at(60 * MS);
        assert_eq!(
            b.deliver(EDITOR, Msg::TimeRequest { t0: 10 * MS }).sent(),
            vec![(EDITOR, Msg::TimeReply { t0: 10 * MS, time: 60 * MS })]
        );
        e.at(12 * MS);
        let step = e.deliver(BUILDER, Msg::TimeReply { t0: 10 * MS, time: 60 * MS });
        let delta = (60 + 1 - 12) * MS as i64;
        assert_eq!(step.adjustments(), vec![delta]);
        assert_eq!(step.emitted(), vec![Event::ClockAdjusted { delta }]);
    }
}
