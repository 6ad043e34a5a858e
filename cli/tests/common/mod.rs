//! Helpers shared by the CLI's integration tests.
#![allow(dead_code)]

pub mod cli;
