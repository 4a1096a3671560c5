//! Physical clocks of simulated nodes: offset, drift, and slewed corrections.
//!
//! A node's local clock reads `t + offset + drift·t + slew(t)`, where `t` is virtual time,
//! `drift` is in parts per million, and `slew` is the part of requested corrections applied so
//! far. Corrections are applied by slewing at [`SLEW_PPM`] (as `adjtime` does): the clock runs
//! a little faster or slower until the correction is absorbed, so it never steps backwards.
//!
//! As with `adjtime`, a new correction *replaces* the part of the previous one not yet absorbed:
//! a synchronization algorithm measures the clock's error as it reads now (the absorbed part
//! included) and asks for exactly that, so adding the old remainder would count it twice.

use ringleader_core::Time;

/// How fast a correction is absorbed: 500 ppm, i.e. 0.5 ms per second (the `adjtime` rate).
pub const SLEW_PPM: i128 = 500;

/// One node's physical clock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
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
}

impl Clock {
    /// A clock with the given offset and drift.
    pub fn new(offset: i64, drift_ppm: i64) -> Clock {
        Clock { offset, drift_ppm, ..Clock::default() }
    }

    fn absorbed(&self, t: Time) -> i64 {
        let budget = (t.saturating_sub(self.since) as i128 * SLEW_PPM / 1_000_000) as i64;
        self.pending.signum() * self.pending.abs().min(budget)
    }

    /// The local reading at virtual time `t` (never below zero).
    pub fn read(&self, t: Time) -> Time {
        let drift = (t as i128 * self.drift_ppm as i128 / 1_000_000) as i64;
        let v = t as i128 + (self.offset + drift + self.applied + self.absorbed(t)) as i128;
        v.max(0) as Time
    }

    /// Requests a correction of `delta` ns at virtual time `t`, relative to the reading at `t`;
    /// it is slewed in, replacing whatever part of the previous correction is not absorbed yet.
    pub fn adjust(&mut self, t: Time, delta: i64) {
        self.applied += self.absorbed(t);
        self.pending = delta;
        self.since = t;
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
}
