//! Physical clocks of simulated nodes: offset, drift, and slewed corrections.
//!
//! A node's local clock reads `t + offset + drift·t + slew(t)`, where `t` is virtual time,
//! `drift` is in parts per million, and `slew` is the part of requested corrections applied so
//! far. Corrections are applied by slewing, by default at [`SLEW_PPM`] (as `adjtime` does): the
//! clock runs a little faster or slower until the correction is absorbed, so it never steps
//! backwards. The slew rate is a run setting (`--slew-ppm`, `[clocks] slew_ppm`, 1..=500,000
//! ppm: even at the fastest rate a clock runs at half speed, never backwards), and a run may
//! let forward corrections *step* at once (`--step-forward`): the notes forbid only stepping a
//! clock back, since that would make it read a time it has already shown.
//!
//! As with `adjtime`, a new correction *replaces* the part of the previous one not yet absorbed:
//! a synchronization algorithm measures the clock's error as it reads now (the absorbed part
//! included) and asks for exactly that, so adding the old remainder would count it twice.

use ringleader_core::Time;

/// How fast a correction is absorbed by default: 500 ppm, i.e. 0.5 ms per second (the
/// `adjtime` rate).
pub const SLEW_PPM: u32 = 500;

/// The fastest slew rate a run may ask for: 500,000 ppm (a slewing clock runs at 0.5× to 1.5×
/// speed, so it never stops or runs backwards).
pub const MAX_SLEW_PPM: u32 = 500_000;

/// One node's physical clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Clock {
    /// Initial offset from virtual time, in ns.
    pub offset: i64,
    /// Drift, in parts per million.
    pub drift_ppm: i64,
    /// Correction already absorbed, in ns.
    applied: i64,
    /// Correction still to absorb, in ns (signed).
    pending: i64,
    /// Virtual time when `pending` started being absorbed.
    since: Time,
    /// How fast corrections are absorbed, in ppm.
    slew_ppm: u32,
    /// Whether a forward correction steps at once instead of slewing.
    step_forward: bool,
}

impl Default for Clock {
    fn default() -> Clock {
        Clock {
            offset: 0,
            drift_ppm: 0,
            applied: 0,
            pending: 0,
            since: 0,
            slew_ppm: SLEW_PPM,
            step_forward: false,
        }
    }
}

impl Clock {
    /// A clock with the given offset and drift.
    pub fn new(offset: i64, drift_ppm: i64) -> Clock {
        Clock { offset, drift_ppm, ..Clock::default() }
    }

    /// The same clock with corrections slewed at `slew_ppm` (1..=[`MAX_SLEW_PPM`]), and forward
    /// corrections stepped at once when `step_forward`.
    pub fn with_correction(self, slew_ppm: u32, step_forward: bool) -> Clock {
        Clock { slew_ppm: slew_ppm.clamp(1, MAX_SLEW_PPM), step_forward, ..self }
    }

    fn absorbed(&self, t: Time) -> i64 {
        let budget = (t.saturating_sub(self.since) as i128 * i128::from(self.slew_ppm) / 1_000_000) as i64;
        self.pending.signum() * self.pending.abs().min(budget)
    }

    /// The local reading at virtual time `t` (never below zero).
    pub fn read(&self, t: Time) -> Time {
        let drift = (t as i128 * self.drift_ppm as i128 / 1_000_000) as i64;
        let v = t as i128 + (self.offset + drift + self.applied + self.absorbed(t)) as i128;
        v.max(0) as Time
    }

    /// Requests a correction of `delta` ns at virtual time `t`, relative to the reading at `t`;
    /// it is slewed in, replacing whatever part of the previous correction is not absorbed yet
    /// (a forward correction steps at once when the clock was built to step forward).
    pub fn adjust(&mut self, t: Time, delta: i64) {
        self.applied += self.absorbed(t);
        self.since = t;
        if self.step_forward && delta > 0 {
            self.applied += delta;
            self.pending = 0;
        } else {
            self.pending = delta;
        }
    }

    /// The part of the last correction still to absorb at virtual time `t`, in ns (signed).
    pub fn outstanding(&self, t: Time) -> i64 {
        self.pending - self.absorbed(t)
    }

    /// Converts a local-time duration into virtual time, by the drift rate.
    pub fn to_virtual(&self, local: Time) -> Time {
        if self.drift_ppm == 0 {
            local
        } else {
            (local as i128 * 1_000_000 / (1_000_000 + self.drift_ppm as i128)).max(0) as Time
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drift_and_offset_distort_the_reading() {
        let c = Clock::new(5_000, 100);
        assert_eq!(c.read(1_000_000_000), 1_000_000_000 + 5_000 + 100_000);
    }

    #[test]
    fn corrections_slew_and_never_go_backwards() {
        let mut c = Clock::new(10_000_000, 0);
        c.adjust(0, -10_000_000);
        let mut last = 0;
        for step in 0..40 {
            let t = step * 1_000_000_000;
            let r = c.read(t);
            assert!(r >= last, "clock went backwards at {t}");
            last = r;
        }
        assert_eq!(c.read(40_000_000_000), 40_000_000_000);
    }

    #[test]
    fn a_new_correction_replaces_the_unabsorbed_rest() {
        let mut c = Clock::new(0, 0);
        c.adjust(0, 10_000_000);
        // After 4 s, 2 ms (500 ppm · 4 s) are absorbed and 8 ms remain.
        assert_eq!(c.outstanding(4_000_000_000), 8_000_000);
        c.adjust(4_000_000_000, 1_000_000);
        assert_eq!(c.outstanding(4_000_000_000), 1_000_000);
        assert_eq!(c.read(10_000_000_000), 10_000_000_000 + 3_000_000);
    }

    #[test]
    fn the_slew_rate_sets_how_fast_a_correction_is_absorbed() {
        // 5,000 ppm absorbs 5 ms per second: a 10 ms correction takes 2 s, not 20 s.
        let mut c = Clock::new(0, 0).with_correction(5_000, false);
        c.adjust(0, 10_000_000);
        assert_eq!(c.outstanding(1_000_000_000), 5_000_000);
        assert_eq!(c.outstanding(2_000_000_000), 0);
        assert_eq!(Clock::default().with_correction(0, false).slew_ppm, 1, "a rate is at least 1 ppm");
    }

    #[test]
    fn stepping_forward_is_at_once_and_backward_corrections_still_slew() {
        let mut c = Clock::new(0, 0).with_correction(SLEW_PPM, true);
        c.adjust(1_000_000_000, 10_000_000);
        assert_eq!(c.read(1_000_000_000), 1_010_000_000, "a forward correction steps");
        assert_eq!(c.outstanding(1_000_000_000), 0);
        c.adjust(2_000_000_000, -4_000_000);
        let mut last = c.read(2_000_000_000);
        for ms in 1..=10_000 {
            let r = c.read(2_000_000_000 + ms * 1_000_000);
            assert!(r >= last, "a backward correction never steps back");
            last = r;
        }
        assert_eq!(c.outstanding(10_000_000_000), 0);
    }
}
