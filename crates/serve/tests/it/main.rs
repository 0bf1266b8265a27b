//! serve's tests in one executable: each module is one former `tests/*.rs` file, and the
//! dependencies (quiche, BoringSSL, aws-lc, nghttp2, rustls) are linked once instead of once a
//! file (a clean build's test executables outgrew a CI machine's disk). One file's tests:
//! `cargo test -p serve --test it gateway_cgi::`.
//!
//! Files kept out, each in an executable of its own beside this one, because it measures or
//! changes something the whole process shares while other tests run:
//! - auth_alloc, gateway_fastcgi_alloc, gateway_proxy_alloc, gateway_static_alloc, h2_alloc,
//!   h2_proxy_alloc, server_alloc, server_page_alloc, server_tls_alloc: count the allocations of
//!   every thread of the process (`test_support::alloc::allocations`), so any other test's
//!   allocation would count.
//! - h2_idle_memory, h3_idle_memory: read the whole C heap in use (`mallinfo2`).
//! - hostile_output, server_h2_floods: read the process's resident set (`/proc/self/status`).
//! - server_emfile: lowers RLIMIT_NOFILE and fills the descriptor table.
//! - h3_gso, h3_gro: set `FLINT_H3_NO_GSO`, `FLINT_H3_NO_GRO`, read by every HTTP/3 server that
//!   starts meanwhile.
//! - gateway_cgi_spawn: straces the loop thread, found in `/proc/self/task` by the name it
//!   inherits from its test thread, truncated to 15 bytes: here every test of a module would
//!   share that prefix.
//!
//! files_alloc is here: it counts only its own thread's allocations, so this executable's
//! global allocator is its counting one (the system allocator plus a counter). gateway_cgi is
//! here though it sets RLIMIT_NOFILE: it only raises the soft limit (to hold a thousand
//! connections' both ends), which no other test here minds. Names alike in two files are
//! apart in their modules; every server and upstream binds 127.0.0.1:0 and every file a test
//! writes is in a temporary directory of its own, as when each file was an executable.

#[path = "../cgi_support/mod.rs"]
mod cgi_support;
#[path = "../common/mod.rs"]
mod common;
#[path = "../fcgi_support/mod.rs"]
mod fcgi_support;
#[path = "../files_support/mod.rs"]
mod files_support;
#[path = "../h2_support/mod.rs"]
mod h2_support;
#[path = "../h3_support/mod.rs"]
mod h3_support;
#[path = "../proxy_support/mod.rs"]
mod proxy_support;
#[path = "../tls_support/mod.rs"]
mod tls_support;

mod auth;
mod files_alloc;
mod files_autoindex;
mod files_basic;
mod files_cache;
mod files_conditional;
mod files_hidden;
mod files_traversal;
mod gateway_access_log_cut;
mod gateway_cgi;
mod gateway_cgi_h2;
mod gateway_cgi_links;
mod gateway_cgi_redirects;
mod gateway_cgi_shutdown;
mod gateway_fastcgi;
mod gateway_fastcgi_events;
mod gateway_h2_uploads;
mod gateway_h2_uploads_read;
mod gateway_h3;
mod gateway_h3_bodies;
mod gateway_proxy;
mod gateway_proxy_forwarded;
mod gateway_proxy_framing;
mod gateway_proxy_h2;
mod gateway_proxy_limits;
mod gateway_proxy_nginx;
mod gateway_proxy_pool;
mod gateway_proxy_smuggling;
mod gateway_proxy_tls;
mod h2spec;
mod h3_early_data;
mod h3_early_gateways;
mod h3_oha;
mod h3_resume;
mod h3_steer;
mod h3_ticket_rotation;
mod hostile_body;
mod hostile_cap;
mod hostile_fin;
mod hostile_interop;
mod hostile_startup;
mod server_access_log;
mod server_access_log_cut;
mod server_h2;
mod server_h2_bodies;
mod server_h2_cached;
mod server_h2_conformance;
mod server_h2_requests;
mod server_h3;
mod server_h3_default;
mod server_h3_defences;
mod server_http;
mod server_limits;
mod server_shutdown;
mod server_syscalls;
mod server_tls;
mod server_tls_records;
mod server_tls_tickets;
