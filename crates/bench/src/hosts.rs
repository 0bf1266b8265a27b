//! Many client hosts: the WebMASTER of the WebSTONE paper (its sections 3 and 3.1), reborn.
//!
//! A server is usually bigger than one client machine, so the load must come from many. The
//! coordinator ([`coordinator`]) starts a `flint worker` ([`worker`]) on each host through a
//! launch template (`ssh -o BatchMode=yes {host} flint worker` by default: the engine every Unix
//! host already runs, with no listener or authentication of our own), waits for READY from every
//! one, measures each one's clock offset, sends GO with an agreed start, and merges what each
//! returns exactly, bucket by bucket ([`crate::runner::merge`]). They talk over the worker's
//! stdin and stdout, one JSON line per message ([`protocol`], docs/hosts.md).

pub mod clock;
pub mod coordinator;
pub mod launch;
pub mod name;
pub mod protocol;
pub mod split;
pub mod strict;
pub mod worker;
