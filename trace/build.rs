//! Generates the Rust types of `protos/perfetto_subset.proto` (Perfetto's
//! published trace definitions, the part Fairway writes) with rust-protobuf's
//! code generator and its pure-Rust parser: no `protoc` binary, and no
//! reflection tables (the lite runtime), so the crate builds in seconds
//! where the whole of Perfetto's definitions take minutes.

fn main() {
    protobuf_codegen::Codegen::new()
        .pure()
        .include("protos")
        .input("protos/perfetto_subset.proto")
        .customize(protobuf_codegen::Customize::default().lite_runtime(true))
        .cargo_out_dir("protos")
        .run_from_script();
}
