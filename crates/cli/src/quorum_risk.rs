//! `ringleader quorum-risk`: the arguments of [`ringleader_analysis::quorum_risk`], which
//! computes the probability that quorum voting with forgetful coordinators violates mutual
//! exclusion.

use clap::{Args, ValueEnum};
use ringleader_analysis::quorum_risk::{self, Options};

/// `--race`: how the protocol-level simulation orders the two participants' requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Race {
    /// The formula's race: the first participant's votes come from m coordinators, the
    /// second's from the other n − m.
    Staged,
    /// No staging: the first participant is queued first at every coordinator.
    None,
}

impl From<Race> for quorum_risk::Race {
    fn from(r: Race) -> quorum_risk::Race {
        match r {
            Race::Staged => quorum_risk::Race::Staged,
            Race::None => quorum_risk::Race::None,
        }
    }
}

/// Probability that quorum voting with forgetful coordinators violates mutual exclusion.
#[derive(Args, Debug)]
pub struct QuorumRiskArgs {
    /// Probability that one coordinator crashes and recovers within the window, in [0, 1]
    /// (a decimal such as 0.0001 or 1e-4, read exactly).
    #[arg(long, value_name = "P", allow_hyphen_values = true)]
    p: String,
    /// Number of coordinators n.
    #[arg(long)]
    n: u32,
    /// Quorum m: votes needed, n/2 < m <= n.
    #[arg(long)]
    m: u32,
    /// Also estimate P_v by sampling the formula's model this many times.
    #[arg(long, value_name = "RUNS")]
    monte_carlo: Option<u64>,
    /// Also run the quorum algorithm in the simulator this many times.
    #[arg(long, value_name = "RUNS")]
    protocol: Option<u64>,
    /// How the protocol-level runs order the two participants' requests.
    #[arg(long, value_enum, default_value = "staged")]
    race: Race,
    /// Seed of the Monte Carlo sampler and of the protocol runs.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
}

/// Runs the subcommand; returns the exit status.
pub fn run(args: QuorumRiskArgs) -> crate::CommandResult {
    let p = quorum_risk::parse_probability(&args.p)?;
    let options = Options {
        p,
        n: args.n,
        m: args.m,
        monte_carlo: args.monte_carlo,
        protocol: args.protocol,
        race: args.race.into(),
        seed: args.seed,
    };
    let risk = quorum_risk::evaluate(&options)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&risk.json())?);
    } else {
        for l in risk.lines() {
            println!("{l}");
        }
    }
    Ok(crate::ExitStatus::Ok)
}
