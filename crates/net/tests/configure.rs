//! A node refuses a bad parameter before it opens a socket, with the words every driver uses
//! (`ringleader_algorithms::configure`).

use ringleader_algorithms::ConfigError;
use ringleader_net::{NetError, NodeConfig};

async fn start_with(algorithm: &str, params: &[(&str, &str)]) -> NetError {
    let mut cfg =
        NodeConfig::new(1, "127.0.0.1:0".parse().unwrap(), vec![(2, "127.0.0.1:9".into())], algorithm);
    cfg.params = params.iter().map(|&(k, v)| (k.to_string(), v.to_string())).collect();
    match ringleader_net::start(cfg).await {
        Ok(_) => panic!("{algorithm} {params:?} started"),
        Err(e) => e,
    }
}

#[tokio::test]
async fn unknown_and_malformed_parameters_are_refused_as_the_simulator_refuses_them() {
    let e = start_with("central", &[("bogus", "1")]).await;
    assert!(
        matches!(&e, NetError::Configure(ConfigError::Unknown { keys, .. }) if keys == &["bogus"]),
        "{e:?}"
    );
    assert!(e.to_string().starts_with("unknown parameter `bogus` for central; it takes: "), "{e}");
    let e = start_with("lamport-clock", &[("x", "1")]).await;
    assert_eq!(e.to_string(), "unknown parameter `x` for lamport-clock; it takes: no parameters");
    let e = start_with("central", &[("coordinator", "one")]).await;
    assert!(matches!(&e, NetError::Configure(ConfigError::Param { algorithm: "central", .. })), "{e:?}");
    assert!(e.to_string().starts_with("central: parameter `coordinator`: cannot read \"one\""), "{e}");
}
