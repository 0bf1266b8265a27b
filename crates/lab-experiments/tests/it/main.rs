//! The lab's end-to-end tests, one test executable: each file here was once a test executable
//! of its own, linking every dependency (aws-lc, quiche, the lab's peers...) again.
//! `cargo test -p lab-experiments --test it experiments_page::` runs one file.
//!
//! Their tests run beside each other in this process: what they make system-wide is named by
//! this process's id and a serial (network namespaces, cgroups, PostgreSQL's directory), and
//! each counts only its own processes (its cgroups, its namespaces' interfaces).
//!
//! Apart, in `tests/experiments_dynamic_php.rs`: its tests check that no php-fpm master is
//! left among this process's children, which `experiments_dynamic_servers`' php-fpm
//! deployments would be; and they start PostgreSQL, which `experiments_dynamic`'s check that
//! none of this process's PostgreSQL servers is left would count.

#[path = "../common/mod.rs"]
mod common;

mod experiments_dynamic;
mod experiments_dynamic_servers;
mod experiments_dynamic_syscalls;
mod experiments_page;
mod experiments_sizes;
mod experiments_tls;
