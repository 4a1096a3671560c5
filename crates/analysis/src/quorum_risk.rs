//! Quorum risk: how likely is quorum voting with forgetful coordinators to break mutual
//! exclusion (`ringleader quorum-risk`)?
//!
//! Two quorums of size `m` out of `n` coordinators intersect in at least `2m − n` of them. If
//! every coordinator of the intersection resets (crashes and recovers, forgetting its grant)
//! within the window, a second participant can gather a quorum while the first holds the
//! section. With `P` the probability that one given coordinator resets within the window:
//!
//! ```text
//!   P_v = Σ_{k = 2m−n}^{m} C(m, k) · P^k · (1 − P)^(m − k)
//! ```
//!
//! Three estimates, side by side:
//! - **exact**: `P` is read as an exact decimal `a / 10^d`, so `P_v` is the exact fraction
//!   `Σ C(m,k)·a^k·(10^d − a)^(m−k) / 10^(d·m)` — a terminating decimal, computed with big
//!   integers (no floating-point underflow at 1e-59) and printed to 4 significant digits and in
//!   full;
//! - **Monte Carlo** ([`Options::monte_carlo`]): samples the formula's own model (each of the `m`
//!   coordinators of the first quorum resets with probability `P`; a violation when at least
//!   `2m − n` did) and reports the estimate with a 95 % Wilson confidence interval;
//! - **protocol** ([`Options::protocol`]): runs the `quorum` algorithm in the simulator, with `n`
//!   coordinators and two participants, each coordinator crashing and recovering inside the
//!   window with probability `P`, and counts runs where the safety checker finds two holders.
//!   [`Race::Staged`] (default) stages the race — the first participant's votes come from
//!   `m` coordinators, the second's from the other `n − m` — so the protocol reproduces the
//!   formula's model; [`Race::None`] lets the first participant be queued first everywhere, so
//!   it holds all `n` votes and the second needs `m` resets: `Σ_{k=m}^{n} C(n,k)·P^k·(1−P)^(n−k)`,
//!   printed beside it. docs/MUTEX.md explains the difference.

use num_bigint::BigUint;
use rand::{RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use ringleader_core::time::MILLISECOND;
use ringleader_judge::checkers::Property;
use ringleader_sim::notation::{At, Partition};
use ringleader_sim::scenario::{ScenarioError, WorkloadKind};
use ringleader_sim::{RunConfig, RunOptions, SimError};
use serde_json::json;

/// How the protocol-level simulation orders the two participants' requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Race {
    /// The race of the formula's model: the first participant's votes come from m
    /// coordinators, the second's from the other n − m.
    Staged,
    /// No staging: the first participant is queued first at every coordinator.
    None,
}

impl Race {
    /// `staged` or `none`.
    pub fn name(self) -> &'static str {
        match self {
            Race::Staged => "staged",
            Race::None => "none",
        }
    }
}

/// What to estimate.
#[derive(Clone, Debug)]
pub struct Options {
    /// Probability that one coordinator crashes and recovers within the window, in [0, 1].
    pub p: Decimal,
    /// Number of coordinators n.
    pub n: u32,
    /// Quorum m: votes needed, n/2 < m <= n.
    pub m: u32,
    /// Also estimate P_v by sampling the formula's model this many times.
    pub monte_carlo: Option<u64>,
    /// Also run the quorum algorithm in the simulator this many times.
    pub protocol: Option<u64>,
    /// How the protocol-level runs order the two participants' requests.
    pub race: Race,
    /// Seed of the Monte Carlo sampler and of the protocol runs.
    pub seed: u64,
}

/// The most coordinators `n` may be (the exact sum has m terms of m-digit binomials).
pub const MAX_COORDINATORS: u32 = 1_000;
/// The most samples the Monte Carlo estimate may draw.
pub const MAX_MONTE_CARLO: u64 = 100_000_000;
/// The most simulated runs the protocol estimate may make.
pub const MAX_PROTOCOL_RUNS: u64 = 1_000_000;
/// The most coordinators each simulated run may have.
pub const MAX_PROTOCOL_COORDINATORS: u32 = 100;

/// Why the estimate could not be made.
#[derive(Debug, thiserror::Error)]
pub enum QuorumRiskError {
    /// `p` is not a decimal number.
    #[error("--p {0:?}: not a decimal number; give a probability in [0, 1] such as 0.05 or 1e-4")]
    NotDecimal(String),
    /// `p` is outside [0, 1].
    #[error("--p {0}: a probability must be between 0 and 1")]
    NotProbability(String),
    /// `n` is 0 or above [`MAX_COORDINATORS`].
    #[error("--n {0}: the number of coordinators must be 1..{MAX_COORDINATORS}")]
    Coordinators(u32),
    /// `m > n`.
    #[error("--m {m}: the quorum cannot exceed the {n} coordinators (need n/2 < m <= n)")]
    QuorumTooLarge {
        /// The quorum.
        m: u32,
        /// The coordinators.
        n: u32,
    },
    /// `2m <= n`.
    #[error("--m {m}: a quorum must be a majority, m > n/2 = {half} (need n/2 < m <= n)")]
    NotMajority {
        /// The quorum.
        m: u32,
        /// n / 2.
        half: f64,
    },
    /// A sample or run count of 0 or above its limit.
    #[error("--{flag} {runs}: give 1..{max} runs")]
    Runs {
        /// The option (`monte-carlo`, `protocol`).
        flag: &'static str,
        /// The count given.
        runs: u64,
        /// Its limit.
        max: u64,
    },
    /// More coordinators than the simulated runs take.
    #[error("--n {0} with --protocol: the simulated runs take 1..{MAX_PROTOCOL_COORDINATORS} coordinators")]
    ProtocolCoordinators(u32),
    /// A protocol run could not be configured.
    #[error(transparent)]
    Config(#[from] ScenarioError),
    /// A protocol run failed.
    #[error(transparent)]
    Sim(#[from] SimError),
}

/// An exact probability in [0, 1]: `numerator / 10^scale`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decimal {
    /// The digits.
    pub numerator: BigUint,
    /// Decimal places.
    pub scale: u32,
}

impl Decimal {
    /// Reads `0.05`, `1e-4`, `2.5E-3`, `1`, `0` exactly.
    pub fn parse(text: &str) -> Option<Decimal> {
        let t = text.trim();
        let (mantissa, exp) = match t.find(['e', 'E']) {
            Some(i) => (&t[..i], t[i + 1..].parse::<i64>().ok()?),
            None => (t, 0),
        };
        let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        if int.is_empty() && frac.is_empty() {
            return None;
        }
        if !int.chars().chain(frac.chars()).all(|c| c.is_ascii_digit()) {
            return None;
        }
        let digits = format!("{int}{frac}");
        let mut numerator: BigUint = if digits.is_empty() { BigUint::ZERO } else { digits.parse().ok()? };
        let mut scale = frac.len() as i64 - exp;
        if scale < 0 {
            numerator *= BigUint::from(10u32).pow((-scale) as u32);
            scale = 0;
        }
        if scale > 10_000 {
            return None;
        }
        Some(Decimal { numerator, scale: scale as u32 })
    }

    fn one(scale: u32) -> BigUint {
        BigUint::from(10u32).pow(scale)
    }

    /// True when the value lies in [0, 1].
    pub fn is_probability(&self) -> bool {
        self.numerator <= Self::one(self.scale)
    }

    /// The value as a float (for sampling).
    pub fn to_f64(&self) -> f64 {
        let s = self.plain();
        s.parse().unwrap_or(f64::NAN)
    }

    /// Every digit, in plain notation (`0.18549375`), trailing zeros removed.
    pub fn plain(&self) -> String {
        let digits = self.numerator.to_string();
        let scale = self.scale as usize;
        if scale == 0 {
            return digits;
        }
        let padded = if digits.len() <= scale {
            format!("{}{digits}", "0".repeat(scale + 1 - digits.len()))
        } else {
            digits
        };
        let (int, frac) = padded.split_at(padded.len() - scale);
        let frac = frac.trim_end_matches('0');
        if frac.is_empty() { int.to_string() } else { format!("{int}.{frac}") }
    }

    /// Four significant digits, rounded half up, in `%.4g` style: plain notation for values
    /// from 1e-4 up, scientific below (`0.1855`, `7.349e-59`).
    pub fn four_digits(&self) -> String {
        if self.numerator == BigUint::ZERO {
            return "0".into();
        }
        let digits = self.numerator.to_string();
        let mut exp = digits.len() as i64 - 1 - self.scale as i64;
        // Round to 4 significant digits.
        let head: u64 = digits[..digits.len().min(4)].parse().expect("digits");
        let mut head = head * 10u64.pow(4 - digits.len().min(4) as u32);
        if digits.len() > 4 && digits.as_bytes()[4] >= b'5' {
            head += 1;
            if head == 10_000 {
                head = 1_000;
                exp += 1;
            }
        }
        let m = head.to_string();
        if (-4..4).contains(&exp) {
            // Plain: place the point.
            let value = Decimal { numerator: BigUint::from(head), scale: (3 - exp) as u32 };
            value.plain()
        } else {
            let frac = m[1..].trim_end_matches('0');
            let mant = if frac.is_empty() { m[..1].to_string() } else { format!("{}.{frac}", &m[..1]) };
            format!("{mant}e{}{:02}", if exp < 0 { "-" } else { "+" }, exp.abs())
        }
    }
}

fn binomial(n: u32, k: u32) -> BigUint {
    let mut c = BigUint::from(1u32);
    for i in 0..k {
        c = c * BigUint::from(n - i) / BigUint::from(i + 1);
    }
    c
}

/// `Σ_{k=lo}^{hi} C(size,k)·P^k·(1−P)^(size−k)` exactly, for `P = p`.
pub fn binomial_tail(p: &Decimal, size: u32, lo: u32) -> Decimal {
    let one = Decimal::one(p.scale);
    let q = &one - &p.numerator;
    let mut sum = BigUint::ZERO;
    for k in lo..=size {
        sum += binomial(size, k) * p.numerator.pow(k) * q.pow(size - k);
    }
    Decimal { numerator: sum, scale: p.scale * size }
}

/// The seed's `P_v` for `P = p`, `n` coordinators, quorum `m`.
pub fn violation_probability(p: &Decimal, n: u32, m: u32) -> Decimal {
    binomial_tail(p, m, 2 * m - n)
}

/// 95 % Wilson score interval for `hits` successes in `runs` trials.
pub fn wilson(hits: u64, runs: u64) -> (f64, f64) {
    let (z, n) = (1.959_963_984_540_054_f64, runs as f64);
    let phat = hits as f64 / n;
    let denom = 1.0 + z * z / n;
    let centre = (phat + z * z / (2.0 * n)) / denom;
    let half = z * (phat * (1.0 - phat) / n + z * z / (4.0 * n * n)).sqrt() / denom;
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

/// A rate for people: four decimals, or scientific notation below 1e-3.
pub fn rate(x: f64) -> String {
    if x != 0.0 && x < 1e-3 { format!("{x:.3e}") } else { format!("{x:.4}") }
}

/// One protocol-level run: was mutual exclusion violated?
fn protocol_run(n: u32, m: u32, race: Race, resets: &[bool], seed: u64) -> Result<bool, QuorumRiskError> {
    let (a, b) = (u64::from(n) + 1, u64::from(n) + 2);
    let mut cfg = RunConfig::new("quorum", n + 2)?;
    cfg.seed = seed;
    cfg.params.insert("coordinators".into(), n.to_string());
    cfg.params.insert("quorum".into(), m.to_string());
    cfg.params.insert("patience".into(), "10ms".into());
    cfg.params.insert("backoff".into(), "1ms".into());
    cfg.workload = Some(WorkloadKind::Saturated);
    cfg.entries = 2;
    cfg.hold = 50_000_000;
    cfg.requesters = Some(vec![a, b]);
    let ids = |r: std::ops::RangeInclusive<u32>| r.map(u64::from).collect::<Vec<_>>();
    let cut = |from: u64, to: Vec<u64>| Partition {
        left: vec![from],
        right: to,
        one_way: true,
        from: 0,
        to: 2 * MILLISECOND,
    };
    if race == Race::Staged {
        if m < n {
            cfg.partition.push(cut(a, ids(m + 1..=n)));
        }
        cfg.partition.push(cut(b, ids(1..=m)));
    }
    for (i, _) in resets.iter().enumerate().filter(|(_, r)| **r) {
        let uid = i as u64 + 1;
        cfg.crash.push(At { uid, time: 4 * MILLISECOND });
        cfg.recover.push(At { uid, time: 5 * MILLISECOND });
    }
    let report = ringleader_sim::run(&cfg, RunOptions::default())?.report;
    Ok(report.violations.iter().any(|v| v.property == Property::Safety))
}

/// The Monte Carlo estimate.
#[derive(Clone, Debug)]
pub struct MonteCarlo {
    /// Samples.
    pub runs: u64,
    /// Samples with at least 2m − n resets.
    pub violations: u64,
    /// `violations / runs`.
    pub estimate: f64,
    /// 95 % Wilson interval.
    pub ci95: (f64, f64),
    /// Whether the interval contains the exact value.
    pub contains_exact: bool,
}

/// The protocol-level estimate.
#[derive(Clone, Debug)]
pub struct Protocol {
    /// Simulated runs.
    pub runs: u64,
    /// The race the runs staged.
    pub race: Race,
    /// Runs where the safety checker found two holders.
    pub violations: u64,
    /// `violations / runs`.
    pub rate: f64,
    /// 95 % Wilson interval.
    pub ci95: (f64, f64),
    /// This race's model, exact.
    pub model: Decimal,
    /// Whether the interval contains the model's value.
    pub contains_model: bool,
}

/// The estimates, side by side.
#[derive(Clone, Debug)]
pub struct QuorumRisk {
    /// What was asked.
    pub options: Options,
    /// `P_v`, exact.
    pub exact: Decimal,
    /// The Monte Carlo estimate, when asked for.
    pub monte_carlo: Option<MonteCarlo>,
    /// The protocol-level estimate, when asked for.
    pub protocol: Option<Protocol>,
}

/// Reads `--p`: a decimal probability in [0, 1].
pub fn parse_probability(text: &str) -> Result<Decimal, QuorumRiskError> {
    let p = Decimal::parse(text).ok_or_else(|| QuorumRiskError::NotDecimal(text.to_string()))?;
    if !p.is_probability() {
        return Err(QuorumRiskError::NotProbability(text.to_string()));
    }
    Ok(p)
}

/// Makes the estimates `o` asks for.
pub fn evaluate(o: &Options) -> Result<QuorumRisk, QuorumRiskError> {
    let (n, m) = (o.n, o.m);
    if n == 0 || n > MAX_COORDINATORS {
        return Err(QuorumRiskError::Coordinators(n));
    }
    if m > n {
        return Err(QuorumRiskError::QuorumTooLarge { m, n });
    }
    if 2 * m <= n {
        return Err(QuorumRiskError::NotMajority { m, half: f64::from(n) / 2.0 });
    }
    let p = &o.p;
    let exact = violation_probability(p, n, m);
    let pf = p.to_f64();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(o.seed);
    let mut monte_carlo = None;
    if let Some(runs) = o.monte_carlo {
        if runs == 0 || runs > MAX_MONTE_CARLO {
            return Err(QuorumRiskError::Runs { flag: "monte-carlo", runs, max: MAX_MONTE_CARLO });
        }
        let need = 2 * m - n;
        let hits = (0..runs)
            .filter(|_| (0..m).filter(|_| rng.random::<f64>() < pf).count() as u32 >= need)
            .count() as u64;
        let (lo, hi) = wilson(hits, runs);
        let ef = exact.to_f64();
        monte_carlo = Some(MonteCarlo {
            runs,
            violations: hits,
            estimate: hits as f64 / runs as f64,
            ci95: (lo, hi),
            contains_exact: lo <= ef && ef <= hi,
        });
    }
    let mut protocol = None;
    if let Some(runs) = o.protocol {
        if runs == 0 || runs > MAX_PROTOCOL_RUNS {
            return Err(QuorumRiskError::Runs { flag: "protocol", runs, max: MAX_PROTOCOL_RUNS });
        }
        if n > MAX_PROTOCOL_COORDINATORS {
            return Err(QuorumRiskError::ProtocolCoordinators(n));
        }
        let mut hits = 0u64;
        for i in 0..runs {
            let resets: Vec<bool> = (0..n).map(|_| rng.random::<f64>() < pf).collect();
            if protocol_run(n, m, o.race, &resets, o.seed.wrapping_add(i))? {
                hits += 1;
            }
        }
        let (lo, hi) = wilson(hits, runs);
        let model = match o.race {
            Race::Staged => exact.clone(),
            Race::None => binomial_tail(p, n, m),
        };
        let mf = model.to_f64();
        protocol = Some(Protocol {
            runs,
            race: o.race,
            violations: hits,
            rate: hits as f64 / runs as f64,
            ci95: (lo, hi),
            model,
            contains_model: lo <= mf && mf <= hi,
        });
    }
    Ok(QuorumRisk { options: o.clone(), exact, monte_carlo, protocol })
}

impl QuorumRisk {
    /// The estimates as one JSON object.
    pub fn json(&self) -> serde_json::Value {
        let o = &self.options;
        let (n, m) = (o.n, o.m);
        let mut out = json!({
            "p": o.p.plain(),
            "n": n,
            "m": m,
            "intersection": 2 * m - n,
            "formula": "P_v = sum_{k=2m-n}^{m} C(m,k) P^k (1-P)^(m-k)",
            "p_v": self.exact.four_digits(),
            "p_v_exact": self.exact.plain(),
        });
        if let Some(mc) = &self.monte_carlo {
            out["monte_carlo"] = json!({
                "runs": mc.runs, "seed": o.seed, "violations": mc.violations, "estimate": mc.estimate,
                "ci95": [mc.ci95.0, mc.ci95.1], "contains_exact": mc.contains_exact,
            });
        }
        if let Some(pr) = &self.protocol {
            out["protocol"] = json!({
                "runs": pr.runs, "race": pr.race.name(), "violations": pr.violations,
                "rate": pr.rate, "ci95": [pr.ci95.0, pr.ci95.1], "model_exact": pr.model.four_digits(),
                "contains_model": pr.contains_model,
            });
        }
        out
    }

    /// The estimates for people, one line each.
    pub fn lines(&self) -> Vec<String> {
        let o = &self.options;
        let (n, m) = (o.n, o.m);
        let mut lines = vec![
            format!(
                "quorum-risk  P = {}, n = {n}, m = {m}: quorums intersect in k >= 2m - n = {}",
                o.p.plain(),
                2 * m - n
            ),
            format!("P_v          {}", self.exact.four_digits()),
            format!("exact        {}", self.exact.plain()),
        ];
        if let Some(mc) = &self.monte_carlo {
            lines.push(format!(
                "monte carlo  {} ({} of {} samples), 95% CI [{}, {}]: {} the exact value",
                rate(mc.estimate),
                mc.violations,
                mc.runs,
                rate(mc.ci95.0),
                rate(mc.ci95.1),
                if mc.contains_exact { "contains" } else { "does NOT contain" }
            ));
        }
        if let Some(pr) = &self.protocol {
            lines.push(format!(
                "protocol     {} ({} of {} simulated runs of `quorum`, race {}), 95% CI [{}, {}]",
                rate(pr.rate),
                pr.violations,
                pr.runs,
                pr.race.name(),
                rate(pr.ci95.0),
                rate(pr.ci95.1)
            ));
            lines.push(format!(
                "             this race's model: {} ({})",
                pr.model.four_digits(),
                match pr.race {
                    Race::Staged => "the formula: the first quorum is exactly m coordinators",
                    Race::None => "the first participant holds all n votes: at least m of n must reset",
                }
            ));
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_reference_values() {
        let p = Decimal::parse("0.0001").unwrap();
        assert_eq!(violation_probability(&p, 32, 24).four_digits(), "7.349e-59");
        let p = Decimal::parse("0.05").unwrap();
        let v = violation_probability(&p, 7, 4);
        assert_eq!(v.plain(), "0.18549375");
        assert_eq!(v.four_digits(), "0.1855");
        assert_eq!(Decimal::parse("1e-4"), Decimal::parse("0.0001"));
    }

    #[test]
    fn formatting_and_parsing() {
        let d = |s: &str| Decimal::parse(s).unwrap();
        assert_eq!(d("0.5").four_digits(), "0.5");
        assert_eq!(d("1").four_digits(), "1");
        assert_eq!(d("0").four_digits(), "0");
        assert_eq!(d("0.99996").four_digits(), "1");
        assert_eq!(d("0.000123456").four_digits(), "0.0001235");
        assert_eq!(d("0.0000123456").four_digits(), "1.235e-05");
        assert_eq!(d("2.5E-3").plain(), "0.0025");
        assert!(Decimal::parse("abc").is_none());
        assert!(Decimal::parse("-0.1").is_none());
        assert!(!d("1.5").is_probability());
        // P = 1: every coordinator resets, so a violation is certain; P = 0: impossible.
        assert_eq!(violation_probability(&d("1"), 7, 4).plain(), "1");
        assert_eq!(violation_probability(&d("0"), 7, 4).plain(), "0");
    }
}
