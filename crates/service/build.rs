//! Compiles the etcd-compatible API's `.proto` files (proto/) into Rust with `protox`, a
//! protobuf compiler written in Rust: no `protoc` on the machine, nothing downloaded.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    const PROTOS: [&str; 5] = [
        "proto/mvccpb/kv.proto",
        "proto/authpb/auth.proto",
        "proto/etcdserverpb/rpc.proto",
        "proto/v3lockpb/v3lock.proto",
        "proto/v3electionpb/v3election.proto",
    ];
    println!("cargo:rerun-if-changed=proto");
    let fds = protox::compile(PROTOS, ["proto"])?;
    tonic_prost_build::configure().build_client(false).build_server(true).compile_fds(fds)?;
    Ok(())
}
