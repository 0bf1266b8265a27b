//! The bench crate's integration tests in one executable: each module is what was once a test
//! file of its own (`cargo test -p bench --test it engine_h2_faults::` runs one of them), so that
//! the dependencies every test links (quiche, BoringSSL, aws-lc, nghttp2, rustls...) are linked
//! once rather than once per file: 38 executables of 60-70 MB made a clean clone's test build
//! outgrow a CI machine's disk.
//!
//! Every module here may run at the same time as any other (libtest's threads, one per core): none
//! touches process-wide state (environment, limits, signals, cwd, `/proc/self`), every file lives
//! in a temporary directory of its own, and every server of the tests' own binds 127.0.0.1:0.
//! Caddy (engine_h3), which cannot be told port 0, gets a port found free and released, which
//! another test may take first: it is started again on another port, and ready only once its
//! own pid listens there. A port that must refuse connects (`common::refused_addr`) is held
//! bound, never listening, for the test's life. One test reads a run's thread in `/proc/self`
//! (by its name, which every run's first thread has): engine_h3_early's stalled handshake, in a
//! process of its own (this executable run again with that test alone).
//!
//! Kept apart, each in an executable of its own (tests/engine_alloc*.rs): the allocation tests.
//! Their counting allocator (`test_support::alloc::Counting`) is the process's global allocator
//! and counts the allocations of every thread but those that leave themselves out (their own
//! servers); `bench::run` allocates on worker threads of its own, so a count cannot be narrowed
//! to one thread, and any other test running in the process would be counted as theirs.
//! - engine_alloc: a static page over HTTP/1.1 allocates nothing per request.
//! - engine_alloc_app: an application workload's allocations per request, held to a ceiling.
//! - engine_alloc_app_h2: the same over HTTP/2.
//! - engine_alloc_app_h3: the same over HTTP/3, less a static run's.
//! - engine_alloc_h2: a static page over HTTP/2 allocates nothing per request.
//! - engine_alloc_redirect: `--redirect N` allocates on first sight only.
//! - engine_alloc_tls: HTTPS keep-alive's allocations per request on the client's side.

// The support modules, shared with the allocation tests' executables (which take the parts they
// need by `#[path]`), declared once: they name each other as `crate::common`, `crate::h2server`...
#[path = "../common/app_server.rs"]
mod app_server;
#[path = "../common/mod.rs"]
mod common;
#[path = "../common/h2_accounting.rs"]
mod h2_accounting;
#[path = "../common/h2server.rs"]
mod h2server;
#[path = "../common/h3_pump.rs"]
mod h3_pump;
#[path = "../common/per_connection.rs"]
mod per_connection;
#[path = "../common/raw_h2.rs"]
mod raw_h2;
// crates/http3's UDP test server, for engine_h3, engine_h3_early, engine_h3_lanes,
// engine_h3_lanes_room, engine_h3_resume and engine_h3_upload.
mod report_support;
#[path = "../../../http3/tests/common/udp.rs"]
mod udp;
// What the HTTP/3 engine tests against it start alike.
mod h3_runs;
// A relay holding the server's flight to a resumed connection until it has seen 0-RTT.
mod h3_hold;
// A server on quiche's HTTP/3 that sends GOAWAY with a stream ID of its choosing, and rejects
// requests (H3_REQUEST_REJECTED) as told.
mod h3_goaway_server;
// The quiche test servers' config and loop thread, and a raw one writing HTTP/3 frames as a
// test gives them (engine_h3_not_h3, engine_h3_body_length, engine_h3_malformed).
mod quiche_server;

mod engine_app_build_once;
mod engine_app_cookie_gate;
mod engine_app_fields;
mod engine_app_form;
mod engine_app_unsent;
mod engine_end_close;
mod engine_end_exact;
mod engine_faults;
mod engine_ground_truth;
mod engine_h2_accounting;
mod engine_h2_accounting_faults;
mod engine_h2_faults;
mod engine_h2_fin;
mod engine_h2_handshake_end;
mod engine_h2_lanes;
mod engine_h2_limits;
mod engine_h2_low_water;
mod engine_h2_page_time;
mod engine_h2_refusals;
mod engine_h2_retried;
mod engine_h2_short_body;
mod engine_h2_stream_ids;
mod engine_h3;
mod engine_h3_app;
mod engine_h3_body_length;
mod engine_h3_early;
mod engine_h3_goaway;
mod engine_h3_goaway_refused;
mod engine_h3_lanes;
mod engine_h3_lanes_room;
mod engine_h3_malformed;
mod engine_h3_not_h3;
mod engine_h3_redirects;
mod engine_h3_rejected;
mod engine_h3_resume;
mod engine_h3_upload;
mod engine_modes;
mod engine_open_page_count;
mod engine_pipeline_close;
mod engine_pipeline_depth;
mod engine_pipeline_lanes;
mod engine_redirects;
mod engine_requests;
mod engine_shared_app;
mod engine_shared_page;
mod engine_start_skew;
mod engine_target;
mod engine_timing;
mod engine_tls;
mod engine_window;
mod fileset_mixes;
mod report_formulas;
mod report_json;
mod report_maxima;
mod report_text;
mod stats_serde;
mod workload_app;
mod workload_load;
