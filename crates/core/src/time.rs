//! Integer time, in nanoseconds.

/// A point in time or a duration, in nanoseconds. Time is an integer so that process state stays
/// `Eq + Hash` and runs stay reproducible.
pub type Time = u64;

/// One microsecond in [`Time`] units.
pub const MICROSECOND: Time = 1_000;
/// One millisecond in [`Time`] units.
pub const MILLISECOND: Time = 1_000_000;
/// One second in [`Time`] units.
pub const SECOND: Time = 1_000_000_000;
