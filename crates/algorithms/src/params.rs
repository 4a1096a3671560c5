//! Algorithm parameters: `key=value` pairs from the command line or a scenario's `[params]`.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::str::FromStr;

use ringleader_core::Time;

/// A parameter was malformed or out of range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParamError {
    /// The value did not parse.
    #[error("parameter `{key}`: cannot read {value:?} as {expected}")]
    Invalid {
        /// Parameter name.
        key: String,
        /// The value given.
        value: String,
        /// What was expected.
        expected: String,
    },
    /// The value parsed but is out of range.
    #[error("parameter `{key}`: {reason}")]
    OutOfRange {
        /// Parameter name.
        key: String,
        /// Why.
        reason: String,
    },
}

/// Named parameters. Reading a key marks it as known, so that after configuration the driver can
/// reject keys no algorithm asked for ([`Params::unknown`]).
#[derive(Debug, Default, Clone)]
pub struct Params {
    values: BTreeMap<String, String>,
    asked: RefCell<BTreeSet<String>>,
}

impl Params {
    /// Parameters from `key=value` pairs.
    pub fn new(values: BTreeMap<String, String>) -> Self {
        Params { values, asked: RefCell::default() }
    }

    /// The raw pairs.
    pub fn values(&self) -> &BTreeMap<String, String> {
        &self.values
    }

    /// Reads `key` as `T`, or `default` when absent.
    pub fn get<T: FromStr>(&self, key: &str, default: T) -> Result<T, ParamError> {
        self.asked.borrow_mut().insert(key.to_string());
        match self.values.get(key) {
            None => Ok(default),
            Some(v) => v.trim().parse().map_err(|_| ParamError::Invalid {
                key: key.into(),
                value: v.clone(),
                expected: std::any::type_name::<T>().rsplit("::").next().unwrap_or("value").into(),
            }),
        }
    }

    /// Reads `key` as a duration (`250us`, `1.5ms`, `2s`; a bare number is milliseconds).
    ///
    /// A given value other than the default must lie in [`PARAM_DURATION_RANGE`]: timers are
    /// periods and timeouts, and one of a few nanoseconds would flood the run with events.
    pub fn duration(&self, key: &str, default: Time) -> Result<Time, ParamError> {
        self.asked.borrow_mut().insert(key.to_string());
        match self.values.get(key) {
            None => Ok(default),
            Some(v) => {
                let t = parse_duration(v).ok_or_else(|| ParamError::Invalid {
                    key: key.into(),
                    value: v.clone(),
                    expected: "a duration such as 250us, 1.5ms, 2s (bare numbers are ms)".into(),
                })?;
                if t != default && !PARAM_DURATION_RANGE.contains(&t) {
                    return Err(ParamError::OutOfRange {
                        key: key.into(),
                        reason: format!("{} is outside the allowed 100us..1h", v.trim()),
                    });
                }
                Ok(t)
            }
        }
    }

    /// Reads `key` as [`Params::duration`] does, except that `0` is allowed: for a period
    /// whose zero means "off" (the elections' `heartbeat`), not a flood of events.
    pub fn duration_or_off(&self, key: &str, default: Time) -> Result<Time, ParamError> {
        match self.values.get(key) {
            Some(v) if parse_duration(v) == Some(0) => {
                self.asked.borrow_mut().insert(key.to_string());
                Ok(0)
            }
            _ => self.duration(key, default),
        }
    }

    /// Keys that were given but never read by the algorithm's configuration.
    pub fn unknown(&self) -> Vec<String> {
        let asked = self.asked.borrow();
        self.values.keys().filter(|k| !asked.contains(*k)).cloned().collect()
    }

    /// Keys the configuration read (what the algorithm takes).
    pub fn asked(&self) -> Vec<String> {
        self.asked.borrow().iter().cloned().collect()
    }
}

/// The range of a time-valued parameter given by the user: 100 µs to one hour (the default
/// value is always accepted, so `0` stays possible where it is the default and means "off").
pub const PARAM_DURATION_RANGE: std::ops::RangeInclusive<Time> = 100_000..=3_600_000_000_000;

/// Parses a duration with a unit (`ns`, `us`, `ms`, `s`, `min`, `h`); a bare number means
/// milliseconds.
pub fn parse_duration(text: &str) -> Option<Time> {
    let t = text.trim();
    let (num, scale) = if let Some(x) = t.strip_suffix("min") {
        (x, 60e9)
    } else if let Some(x) = t.strip_suffix('h') {
        (x, 3600e9)
    } else if let Some(x) = t.strip_suffix("ns") {
        (x, 1.0)
    } else if let Some(x) = t.strip_suffix("us") {
        (x, 1e3)
    } else if let Some(x) = t.strip_suffix("ms") {
        (x, 1e6)
    } else if let Some(x) = t.strip_suffix('s') {
        (x, 1e9)
    } else {
        (t, 1e6)
    };
    let v: f64 = num.trim().parse().ok()?;
    if !v.is_finite() || v < 0.0 {
        return None;
    }
    let ns = (v * scale).round();
    (ns <= u64::MAX as f64).then_some(ns as Time)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_take_units_and_default_to_ms() {
        assert_eq!(parse_duration("250us"), Some(250_000));
        assert_eq!(parse_duration("1.5ms"), Some(1_500_000));
        assert_eq!(parse_duration("2s"), Some(2_000_000_000));
        assert_eq!(parse_duration("5min"), Some(300_000_000_000));
        assert_eq!(parse_duration("24h"), Some(86_400_000_000_000));
        assert_eq!(parse_duration("7"), Some(7_000_000));
        assert_eq!(parse_duration("3ns"), Some(3));
        assert_eq!(parse_duration("-1ms"), None);
        assert_eq!(parse_duration("abc"), None);
    }

    #[test]
    fn unread_parameters_are_unknown() {
        let p = Params::new([("timeout".into(), "5ms".into()), ("x".into(), "1".into())].into());
        assert_eq!(p.duration("timeout", 0), Ok(5_000_000));
        assert_eq!(p.unknown(), vec!["x".to_string()]);
        assert!(p.get::<u32>("x", 0).is_ok());
        assert!(p.unknown().is_empty());
    }
}
