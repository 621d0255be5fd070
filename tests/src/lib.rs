//! Shared code of Partita's end-to-end tests: a real server on 127.0.0.1:0 with a temporary
//! data directory, a sqllogictest driver over the wire, and the crash tests' workload and
//! writer handling.

pub mod bank;
pub mod crash;
pub mod pg;
pub mod server;
pub mod slt;
