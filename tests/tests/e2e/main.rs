//! Partita's end-to-end tests, in one test binary (each module was once a binary of its own;
//! one binary links once, which keeps debug builds small and fast). `cargo test -p tests
//! --test e2e <module>::` runs one module.

mod copy;
mod differential;
mod drivers;
mod index_crash;
mod indexes;
mod parquet;
mod psql;
mod query_classes;
mod slt;
mod storage_crash;
mod wire;
