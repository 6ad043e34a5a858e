//! The function's name, which SQL calls it by and its messages name.

/// The function's name in SQL.
pub const NAME: &str = "ldp_estimate";
