//! The `flint` executable's end-to-end tests, one test executable: every file here was once a
//! test executable of its own, each linking every dependency the tests use (BoringSSL, quiche,
//! nghttp2, rustls...), 40 times over. `cargo test -p flint --test it bench_app::` runs one file.
//!
//! Each file is a module; its tests run beside every other file's (`--test-threads` of them at
//! once, as before within a file). None relies on state of this test process: they run the
//! built `flint` (and nginx, h2o, Chromium, sshd, strace) as child processes, each in temporary
//! directories of its own, with its own child pids. Servers that can be told port 0 bind a
//! kernel-chosen one; those that cannot (nginx, h2o, sshd, Caddy, lab peers, `compare --serve`)
//! get a port found free and released, which another test's server may take first: they are
//! started again on another port when theirs exits, and (but `compare --serve`, whose command
//! may serve from outside its process tree) are ready only once their own process tree listens
//! on it (`lab_process::procfs::listens_only`). A port that must refuse connects
//! (`common::refused_addr`) is held bound, never listening, for the test's life. The few
//! system-wide things they make are named apart: `hosts_netns`'s bridge and namespaces by this
//! process's id (it is the only file that makes any), sshd's and nginx's files in their test's
//! temporary directory.

mod app_support;
mod common;
mod discover_site;
mod hosts_support;
mod nginx_tls;

mod bench_app;
mod bench_app_repeat;
mod bench_debug;
mod bench_fail_fast;
mod bench_h2_peers;
mod bench_h3_gro;
mod bench_habits;
mod bench_pipeline;
mod bench_redirects;
mod bench_redirects_h2;
mod bench_shared_page;
mod bench_statuses;
mod bench_target;
mod bench_tls_nginx;
mod bench_tls_reasons;
mod cli;
mod compare;
mod compare_hosts_app;
mod discover;
mod discover_access_log;
mod discover_bounds;
mod discover_browser;
mod discover_browser_stop;
mod discover_chromium;
mod discover_long_poll;
mod discover_sites;
mod exit_codes;
mod hosts;
mod hosts_app;
mod hosts_builds;
mod hosts_early;
mod hosts_exact;
mod hosts_netns;
mod hosts_report;
mod hosts_ssh;
mod lab_killed;
mod lab_nothing_measured;
mod profile;
mod report_charts;
mod run_lab_refusals;
mod run_tls;
mod serve_http3;
mod serve_startup;
mod serve_vs_nginx;
mod stdout;
