//! The textual notations shared by flags and scenario files: times, latency distributions,
//! faults and partitions. One parser each, so a flag and a scenario field mean the same thing.

use std::fmt;
use std::str::FromStr;

use ringleader_core::{Time, Uid};
use serde::{Deserialize, Serialize};

pub use ringleader_algorithms::params::parse_duration;

/// Formats a time for people and for flags: the largest unit that keeps it exact.
pub fn format_duration(t: Time) -> String {
    if t == 0 {
        "0".into()
    } else if t.is_multiple_of(1_000_000_000) {
        format!("{}s", t / 1_000_000_000)
    } else if t.is_multiple_of(1_000_000) {
        format!("{}ms", t / 1_000_000)
    } else if t.is_multiple_of(1_000) {
        format!("{}us", t / 1_000)
    } else {
        format!("{t}ns")
    }
}

fn duration(text: &str, what: &str) -> Result<Time, String> {
    parse_duration(text).ok_or_else(|| {
        format!(
            "{what}: cannot read {text:?} as a time (use 250us, 1.5ms, 2s, 5min, 24h; a bare number is ms)"
        )
    })
}

fn uid(text: &str, what: &str) -> Result<Uid, String> {
    text.trim().parse().map_err(|_| format!("{what}: {text:?} is not a node id (ids are 1..N)"))
}

/// A one-way latency distribution (never below zero).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum Latency {
    /// Always `d`.
    Constant(Time),
    /// Uniform on `[a, b]`.
    Uniform(Time, Time),
    /// Exponential with the given mean.
    Exponential(Time),
    /// Normal with mean and standard deviation, clamped at zero.
    Normal(Time, Time),
    /// Log-normal with the given median and σ (of the underlying normal).
    LogNormal(Time, f64),
}

impl Latency {
    /// An upper bound on the delay, where the distribution has one; for unbounded
    /// distributions a high quantile (mean + 6·sd, or 99.99th percentile) stands in.
    pub fn bound(&self) -> Time {
        match *self {
            Latency::Constant(d) => d,
            Latency::Uniform(_, b) => b,
            Latency::Exponential(m) => m.saturating_mul(10),
            Latency::Normal(m, sd) => m.saturating_add(sd.saturating_mul(6)),
            Latency::LogNormal(med, sigma) => (med as f64 * (3.72 * sigma).exp()) as Time,
        }
    }

    /// True when every sample is the same.
    pub fn is_constant(&self) -> bool {
        matches!(self, Latency::Constant(_))
    }
}

impl Default for Latency {
    fn default() -> Self {
        Latency::Constant(1_000_000)
    }
}

impl fmt::Display for Latency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = format_duration;
        match *self {
            Latency::Constant(x) => write!(f, "constant:{}", d(x)),
            Latency::Uniform(a, b) => write!(f, "uniform:{}..{}", d(a), d(b)),
            Latency::Exponential(m) => write!(f, "exponential:{}", d(m)),
            Latency::Normal(m, s) => write!(f, "normal:{},{}", d(m), d(s)),
            Latency::LogNormal(m, s) => write!(f, "lognormal:{},{}", d(m), s),
        }
    }
}

impl From<Latency> for String {
    fn from(l: Latency) -> String {
        l.to_string()
    }
}

impl TryFrom<String> for Latency {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        s.parse()
    }
}

impl FromStr for Latency {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        const ALLOWED: &str =
            "constant:D, uniform:A..B, exponential:MEAN, normal:MEAN,SD, lognormal:MEDIAN,SIGMA";
        let (kind, arg) =
            s.split_once(':').ok_or_else(|| format!("latency {s:?}: expected one of {ALLOWED}"))?;
        let what = "latency";
        match kind.trim() {
            "constant" => Ok(Latency::Constant(duration(arg, what)?)),
            "uniform" => {
                let (a, b) =
                    arg.split_once("..").ok_or_else(|| format!("latency {s:?}: uniform takes A..B"))?;
                let (a, b) = (duration(a, what)?, duration(b, what)?);
                if a > b {
                    return Err(format!("latency {s:?}: the lower bound is above the upper bound"));
                }
                Ok(Latency::Uniform(a, b))
            }
            "exponential" => Ok(Latency::Exponential(duration(arg, what)?)),
            "normal" => {
                let (m, sd) =
                    arg.split_once(',').ok_or_else(|| format!("latency {s:?}: normal takes MEAN,SD"))?;
                Ok(Latency::Normal(duration(m, what)?, duration(sd, what)?))
            }
            "lognormal" => {
                let (m, sigma) = arg
                    .split_once(',')
                    .ok_or_else(|| format!("latency {s:?}: lognormal takes MEDIAN,SIGMA"))?;
                let sigma: f64 =
                    sigma.trim().parse().map_err(|_| format!("latency {s:?}: SIGMA must be a number"))?;
                if !(sigma.is_finite() && sigma >= 0.0) {
                    return Err(format!("latency {s:?}: SIGMA must be a non-negative number"));
                }
                Ok(Latency::LogNormal(duration(m, what)?, sigma))
            }
            other => Err(format!("latency {s:?}: unknown distribution {other:?}; expected one of {ALLOWED}")),
        }
    }
}

/// `ID@TIME`: something happens to node `uid` at `time` (crash, recover).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct At {
    /// The node's uid.
    pub uid: Uid,
    /// When.
    pub time: Time,
}

impl FromStr for At {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (id, t) =
            s.split_once('@').ok_or_else(|| format!("{s:?}: expected ID@TIME, e.g. 7@0 or 3@1.5ms"))?;
        Ok(At { uid: uid(id, s)?, time: duration(t, s)? })
    }
}

impl fmt::Display for At {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.uid, format_duration(self.time))
    }
}

impl From<At> for String {
    fn from(a: At) -> String {
        a.to_string()
    }
}

impl TryFrom<String> for At {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        s.parse()
    }
}

/// `ID@FROM..TO`: node `uid` is paused (slow, not dead) from `from` to `to`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Pause {
    /// The node's uid.
    pub uid: Uid,
    /// Pause start.
    pub from: Time,
    /// Resume time.
    pub to: Time,
}

fn window(text: &str, s: &str) -> Result<(Time, Time), String> {
    let (a, b) = text
        .split_once("..")
        .ok_or_else(|| format!("{s:?}: expected a window FROM..TO, e.g. 100..3000 or 2ms..1s"))?;
    let (a, b) = (duration(a, s)?, duration(b, s)?);
    if a > b {
        return Err(format!("{s:?}: the window ends before it starts"));
    }
    Ok((a, b))
}

impl FromStr for Pause {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (id, w) =
            s.split_once('@').ok_or_else(|| format!("{s:?}: expected ID@FROM..TO, e.g. 3@10ms..200ms"))?;
        let (from, to) = window(w, s)?;
        Ok(Pause { uid: uid(id, s)?, from, to })
    }
}

impl fmt::Display for Pause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}..{}", self.uid, format_duration(self.from), format_duration(self.to))
    }
}

impl From<Pause> for String {
    fn from(a: Pause) -> String {
        a.to_string()
    }
}

impl TryFrom<String> for Pause {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        s.parse()
    }
}

/// `A,B|C,D@FROM..TO` (symmetric) or `A,B>C,D@FROM..TO` (one-way: A,B cannot reach C,D).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Partition {
    /// One side (uids).
    pub left: Vec<Uid>,
    /// The other side (uids).
    pub right: Vec<Uid>,
    /// True when only `left → right` is cut.
    pub one_way: bool,
    /// Start.
    pub from: Time,
    /// Heal.
    pub to: Time,
}

impl FromStr for Partition {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (sides, w) = s
            .split_once('@')
            .ok_or_else(|| format!("{s:?}: expected A,B|C,D@FROM..TO (or A,B>C,D@… for a one-way cut)"))?;
        let (l, r, one_way) = if let Some((l, r)) = sides.split_once('|') {
            (l, r, false)
        } else if let Some((l, r)) = sides.split_once('>') {
            (l, r, true)
        } else {
            return Err(format!("{s:?}: separate the sides with | (both ways) or > (one way)"));
        };
        let side = |x: &str| -> Result<Vec<Uid>, String> {
            let mut v = x.split(',').map(|i| uid(i, s)).collect::<Result<Vec<_>, _>>()?;
            v.sort_unstable();
            v.dedup();
            Ok(v)
        };
        let (left, right) = (side(l)?, side(r)?);
        if left.iter().any(|x| right.contains(x)) {
            return Err(format!("{s:?}: a node cannot be on both sides"));
        }
        let (from, to) = window(w, s)?;
        Ok(Partition { left, right, one_way, from, to })
    }
}

impl fmt::Display for Partition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let j = |v: &[Uid]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(",");
        let sep = if self.one_way { '>' } else { '|' };
        write!(
            f,
            "{}{sep}{}@{}..{}",
            j(&self.left),
            j(&self.right),
            format_duration(self.from),
            format_duration(self.to)
        )
    }
}

impl From<Partition> for String {
    fn from(a: Partition) -> String {
        a.to_string()
    }
}

impl TryFrom<String> for Partition {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        s.parse()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notations_round_trip() {
        for s in
            ["constant:1ms", "uniform:1ms..2ms", "exponential:5ms", "normal:2ms,500us", "lognormal:1ms,0.5"]
        {
            assert_eq!(s.parse::<Latency>().unwrap().to_string(), s);
        }
        assert_eq!("7@0".parse::<At>().unwrap(), At { uid: 7, time: 0 });
        assert_eq!("3@1.5ms".parse::<At>().unwrap().time, 1_500_000);
        let p: Partition = "1,2|3,4,5@100..3000".parse().unwrap();
        assert_eq!((p.left.clone(), p.right.clone(), p.one_way), (vec![1, 2], vec![3, 4, 5], false));
        assert_eq!((p.from, p.to), (100_000_000, 3_000_000_000));
        assert_eq!(p.to_string().parse::<Partition>().unwrap(), p);
        assert!("1,2>3@0..1".parse::<Partition>().unwrap().one_way);
        assert_eq!("2@1ms..3ms".parse::<Pause>().unwrap().to_string(), "2@1ms..3ms");
    }

    #[test]
    fn bad_notations_say_what_is_allowed() {
        assert!("gaussian:1ms".parse::<Latency>().unwrap_err().contains("expected one of"));
        assert!("uniform:3ms..1ms".parse::<Latency>().is_err());
        assert!("7@soon".parse::<At>().unwrap_err().contains("time"));
        assert!("x@1".parse::<At>().unwrap_err().contains("node id"));
        assert!("1,2|2,3@0..1".parse::<Partition>().is_err());
        assert!("1@5..2".parse::<Pause>().is_err());
    }
}
