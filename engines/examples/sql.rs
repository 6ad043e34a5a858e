//! Runs SQL statements with `ldp_estimate` registered and prints the last
//! one's rows, tab-separated (one line per row):
//!
//! ```sh
//! cargo run -p localdp-datafusion --example sql -- \
//!   "CREATE EXTERNAL TABLE page_views STORED AS PARQUET PARTITIONED BY (day) LOCATION 'reports/metric=page_views/'" \
//!   "SELECT day, ldp_estimate('{\"protocol\":\"olh\",\"epsilon\":1,\"domain\":1024}', id, seed, value) FROM page_views GROUP BY day ORDER BY day"
//! ```

use datafusion::arrow::array::AsArray;
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::prelude::SessionContext;

#[tokio::main]
async fn main() -> datafusion::error::Result<()> {
    let ctx = SessionContext::new();
    localdp_datafusion::register(&ctx);
    let mut batches = Vec::new();
    for statement in std::env::args().skip(1) {
        batches = ctx.sql(&statement).await?.collect().await?;
    }
    for batch in &batches {
        let columns = batch.columns().iter().map(|c| cast(c, &DataType::Utf8)).collect::<Result<Vec<_>, _>>()?;
        for row in 0..batch.num_rows() {
            let cells: Vec<&str> =
                columns.iter().map(|c| if c.is_null(row) { "NULL" } else { c.as_string::<i32>().value(row) }).collect();
            println!("{}", cells.join("\t"));
        }
    }
    Ok(())
}
