//! Reports through Arrow and Parquet: round trips for every protocol, the
//! same counts as JSON, and hostile batches and files.

mod protocols;

use arrow_array::builder::{ListBuilder, UInt32Builder};
use arrow_array::types::Int32Type;
use arrow_array::{ArrayRef, DictionaryArray, Int32Array, RecordBatch, StringArray, UInt64Array};
use arrow_schema::{DataType, Field, Schema};
use localdp::{Aggregator, Metric, PostProcessing, Rejection, Report, SimulationRng};
use localdp_arrow::{add_record_batch, batch_view, ReportBuilder};
use protocols::{value, PROTOCOLS};
use std::path::PathBuf;
use std::sync::Arc;

/// `n` reports of a config, seeded.
fn reports(config: &str, values: &[&str], n: usize, seed: u64) -> Vec<Report> {
    let metric = Metric::from_json(config).unwrap();
    let mut rng = SimulationRng::seed_from_u64(seed);
    (0..n).map(|i| metric.randomize_text(value(values, i), &mut rng).unwrap()).collect()
}

fn batch_of(metric: &Metric, reports: &[Report]) -> RecordBatch {
    let mut builder = ReportBuilder::new(metric);
    for report in reports {
        builder.push(report).unwrap();
    }
    builder.finish()
}

/// The estimate as `localdp aggregate` prints it, and the counts.
fn summary(aggregator: &Aggregator) -> String {
    let estimate = aggregator.estimate(PostProcessing::None).map(|e| serde_json::to_string(&e).unwrap());
    format!("n {} rejected {:?} estimate {:?}", aggregator.n(), aggregator.rejected(), estimate.map_err(|e| e.to_string()))
}

fn json_aggregate(metric: &Metric, reports: &[Report]) -> Aggregator {
    let mut aggregator = Aggregator::new(metric.clone());
    for report in reports {
        let _ = aggregator.add_json(report.to_json());
    }
    aggregator
}

#[test]
fn every_protocol_has_a_config() {
    for protocol in localdp::Protocol::all() {
        let named = format!(r#""protocol":"{}""#, protocol.name());
        assert!(PROTOCOLS.iter().any(|(c, _)| c.contains(&named)), "{protocol} has no config in tests/protocols.rs");
    }
}

#[test]
fn reports_round_trip_through_a_batch() {
    for (config, values) in PROTOCOLS {
        let metric = Metric::from_json(config).unwrap();
        let originals = reports(config, values, 300, 11);
        let batch = batch_of(&metric, &originals);
        assert_eq!(batch.schema().fields(), localdp_arrow::schema(&metric).fields(), "{config}");
        let view = batch_view(&batch).unwrap();
        assert_eq!((view.version, view.id, view.len), (1, metric.id().as_str(), originals.len()), "{config}");
        for (i, original) in originals.iter().enumerate() {
            let payload = view.row(i).unwrap();
            let report = Report { payload, ..original.clone() };
            assert_eq!(&report, original, "{config} row {i}");
        }
    }
}

#[test]
fn a_batch_counts_as_its_json_lines() {
    for (config, values) in PROTOCOLS {
        let metric = Metric::from_json(config).unwrap();
        let originals = reports(config, values, 500, 12);
        let mut columns = Aggregator::new(metric.clone());
        // In several batches, one of them sliced out of a larger one (offsets).
        let whole = batch_of(&metric, &originals);
        assert!(add_record_batch(&mut columns, &whole.slice(0, 123)).is_none(), "{config}");
        assert!(add_record_batch(&mut columns, &whole.slice(123, 377)).is_none(), "{config}");
        assert_eq!(summary(&columns), summary(&json_aggregate(&metric, &originals)), "{config}");
    }
}

#[test]
fn another_configs_rows_are_config_mismatches() {
    // A batch of OLH reports at ε = 2 given to the GRR aggregator, and one
    // whose dictionary mixes both identities: counted as JSON counts them.
    let (grr, olh) = (PROTOCOLS[0], PROTOCOLS[4]);
    let metric = Metric::from_json(grr.0).unwrap();
    let other = Metric::from_json(olh.0).unwrap();
    let foreign = reports(olh.0, olh.1, 40, 3);
    let mut aggregator = Aggregator::new(metric.clone());
    let (row, error) = add_record_batch(&mut aggregator, &batch_of(&other, &foreign)).unwrap();
    assert_eq!(row, 0);
    assert!(matches!(error, localdp::Error::Rejected { reason: Rejection::ConfigMismatch, .. }), "{error}");
    let mut json = Aggregator::new(metric.clone());
    for r in &foreign {
        let _ = json.add_json(r.to_json());
    }
    assert_eq!(summary(&aggregator), summary(&json));

    // Rows 0..5 ours, 5..8 another metric's id, 8..10 ours, row 10 null.
    let own = reports(grr.0, grr.1, 10, 4);
    let batch = batch_of(&metric, &own);
    let keys = Int32Array::from(vec![Some(0), Some(0), Some(0), Some(0), Some(0), Some(1), Some(1), Some(1), Some(0), Some(0)]);
    let ids: ArrayRef = Arc::new(StringArray::from(vec![metric.id(), other.id()]));
    let mixed = DictionaryArray::<Int32Type>::try_new(keys, ids).unwrap();
    let mut columns = batch.columns().to_vec();
    columns[0] = Arc::new(mixed);
    let mixed = RecordBatch::try_new(batch.schema(), columns).unwrap();
    assert!(matches!(batch_view(&mixed), Err(localdp_arrow::Error::MixedIds)));
    let mut aggregator = Aggregator::new(metric.clone());
    let (row, _) = add_record_batch(&mut aggregator, &mixed).unwrap();
    assert_eq!(row, 5);
    assert_eq!((aggregator.n(), aggregator.rejected().get(Rejection::ConfigMismatch)), (7, 3));
}

/// A batch of `metric`'s schema but with `column` replaced.
fn with_column(batch: &RecordBatch, name: &str, column: ArrayRef, nullable: bool) -> RecordBatch {
    let schema = batch.schema();
    let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    let mut columns = batch.columns().to_vec();
    let at = fields.iter().position(|f| f.name() == name).unwrap();
    fields[at] = Field::new(name, column.data_type().clone(), nullable);
    columns[at] = column;
    RecordBatch::try_new(Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone())), columns).unwrap()
}

#[test]
fn hostile_batches_are_rejected_row_by_row() {
    let (config, values) = PROTOCOLS[0]; // grr over 8 values: one UInt64 column
    let metric = Metric::from_json(config).unwrap();
    let batch = batch_of(&metric, &reports(config, values, 6, 5));
    let count = |batch: &RecordBatch| {
        let mut aggregator = Aggregator::new(metric.clone());
        let first = add_record_batch(&mut aggregator, batch).map(|(row, e)| (row, e.to_string()));
        let rejected = Rejection::ALL.map(|r| aggregator.rejected().get(r));
        (aggregator.n(), rejected, first)
    };
    let malformed = |n| [n, 0, 0, 0, 0, 0];

    // The value column as text: every row malformed, and the view says why.
    let text = with_column(&batch, "value", Arc::new(StringArray::from(vec!["1"; 6])), false);
    let (n, rejected, first) = count(&text);
    assert_eq!((n, rejected), (0, malformed(6)));
    assert_eq!(first.unwrap().0, 0);
    assert!(batch_view(&text).unwrap_err().to_string().contains("\"value\" is Utf8, expected UInt64"));

    // Nulls in the value column, and a value outside the domain.
    let nulls = UInt64Array::from(vec![Some(1), None, Some(2), None, Some(99), Some(0)]);
    let (n, rejected, first) = count(&with_column(&batch, "value", Arc::new(nulls), true));
    assert_eq!((n, rejected), (3, [2, 0, 0, 1, 0, 0]));
    assert_eq!(first.unwrap().0, 1);

    // No id column; an id column of numbers; a null id.
    let no_id = batch.project(&[1]).unwrap();
    assert_eq!(count(&no_id).1, malformed(6));
    let (_, rejected, first) = count(&with_column(&batch, "id", Arc::new(UInt64Array::from(vec![1; 6])), false));
    assert_eq!(rejected, malformed(6));
    assert!(first.unwrap().1.contains("\"id\" is UInt64"));
    let keys = Int32Array::from(vec![Some(0), Some(0), None, Some(0), Some(0), Some(0)]);
    let ids = DictionaryArray::<Int32Type>::try_new(keys, Arc::new(StringArray::from(vec![metric.id()]))).unwrap();
    let (n, rejected, first) = count(&with_column(&batch, "id", Arc::new(ids), true));
    assert_eq!((n, rejected, first.unwrap().0), (5, malformed(1), 2));

    // Another format version in the metadata: every row unsupported.
    let mut metadata = batch.schema().metadata().clone();
    metadata.insert("localdp.version".into(), "2".into());
    let v2 = RecordBatch::try_new(Arc::new(batch.schema().as_ref().clone().with_metadata(metadata)), batch.columns().to_vec()).unwrap();
    assert_eq!(count(&v2).1, [0, 6, 0, 0, 0, 0]);
    // No metadata at all (a query engine's batch): this build's version.
    let bare = RecordBatch::try_new(Arc::new(Schema::new(batch.schema().fields().clone())), batch.columns().to_vec()).unwrap();
    assert_eq!(count(&bare).0, 6);
}

#[test]
fn null_list_items_are_malformed() {
    let (config, values) = PROTOCOLS[8]; // dbitflip: attributes and values
    let metric = Metric::from_json(config).unwrap();
    let batch = batch_of(&metric, &reports(config, values, 3, 6));
    let mut attributes = ListBuilder::new(UInt32Builder::new());
    for _ in 0..3 {
        attributes.append_value([Some(0), None]);
    }
    let hostile = with_column(&batch, "attributes", Arc::new(attributes.finish()), false);
    let mut aggregator = Aggregator::new(metric);
    // The view refuses such a batch; counted, each row with a null item is malformed.
    assert!(batch_view(&hostile).unwrap_err().to_string().contains("\"attributes\" has null items"));
    let (row, error) = add_record_batch(&mut aggregator, &hostile).unwrap();
    assert!(matches!(error, localdp::Error::Rejected { reason: Rejection::Malformed, .. }), "{error}");
    assert_eq!((row, aggregator.n(), aggregator.rejected().get(Rejection::Malformed)), (0, 0, 3));
}

#[test]
fn the_builder_refuses_what_does_not_fit() {
    let grr = Metric::from_json(PROTOCOLS[0].0).unwrap();
    let oue = Metric::from_json(PROTOCOLS[2].0).unwrap();
    let mut builder = ReportBuilder::new(&grr);
    let other = reports(PROTOCOLS[2].0, PROTOCOLS[2].1, 1, 1).remove(0);
    assert!(matches!(builder.push(&other), Err(localdp_arrow::Error::OtherMetric)));
    let mut own = reports(PROTOCOLS[0].0, PROTOCOLS[0].1, 1, 1).remove(0);
    own.payload = other.payload.clone();
    assert!(matches!(builder.push(&own), Err(localdp_arrow::Error::PayloadShape)));
    // OUE bits of another width than the domain's.
    let mut builder = ReportBuilder::new(&oue);
    let mut wide = other.clone();
    wide.payload = localdp::Payload::Bits(localdp::report::BitVector::from_bytes(vec![0, 0]));
    assert!(matches!(builder.push(&wide), Err(localdp_arrow::Error::PayloadShape)));
    assert!(builder.is_empty());
    builder.push(&other).unwrap();
    assert_eq!(builder.finish().num_rows(), 1);
}

/// A fresh path in the temporary directory.
fn temp_path(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("localdp-arrow-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[test]
fn parquet_files_aggregate_as_their_reports_in_any_row_groups() {
    for (k, (config, values)) in PROTOCOLS.iter().enumerate() {
        let metric = Metric::from_json(config).unwrap();
        let originals = reports(config, values, 1000, 13);
        let mut rejected = localdp::RejectionCounts::default();
        rejected.count(Rejection::Malformed);
        let path = temp_path(&format!("round-trip-{k}.parquet"));
        let mut writer =
            localdp_arrow::ParquetWriter::new(std::fs::File::create(&path).unwrap(), &metric, config, 300).unwrap();
        for chunk in originals.chunks(250) {
            writer.write(&batch_of(&metric, chunk)).unwrap();
        }
        writer.finish(&rejected).unwrap();
        let file = localdp_arrow::ParquetFile::open(&path).unwrap();
        assert_eq!(file.row_groups(), 4, "{config}");
        assert_eq!(file.exported_rejections().unwrap(), rejected);
        // Row groups 0..1 and 1..4 into two aggregators, merged.
        let mut first = Aggregator::new(metric.clone());
        let mut rest = Aggregator::new(metric.clone());
        assert!(file.read_into(&mut first, 0..1).unwrap().is_none());
        assert!(file.read_into(&mut rest, 1..4).unwrap().is_none());
        first.merge(&rest).unwrap();
        assert_eq!(summary(&first), summary(&json_aggregate(&metric, &originals)), "{config}");
        std::fs::remove_file(&path).unwrap();
    }
}

#[test]
fn snappy_files_of_other_writers_read_and_exported_rejections_add_once() {
    use parquet::basic::Compression;
    use parquet::file::properties::WriterProperties;
    let (config, values) = PROTOCOLS[0];
    let metric = Metric::from_json(config).unwrap();
    let originals = reports(config, values, 500, 5);
    // Snappy, as pyarrow, pandas and Polars write by default (read since
    // the `snap` feature; before, "Disabled feature at compile time: snap").
    let path = temp_path("snappy.parquet");
    let properties = WriterProperties::builder().set_compression(Compression::SNAPPY).build();
    let batch = batch_of(&metric, &originals);
    let mut writer =
        parquet::arrow::ArrowWriter::try_new(std::fs::File::create(&path).unwrap(), batch.schema(), Some(properties)).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    let file = localdp_arrow::ParquetFile::open(&path).unwrap();
    let mut aggregator = Aggregator::new(metric.clone());
    aggregator.add_json("not json").unwrap_err();
    assert!(file.read_into(&mut aggregator, 0..file.row_groups()).unwrap().is_none());
    // A file without localdp.rejected adds none; the aggregator's own stay.
    file.add_exported_rejections(&mut aggregator).unwrap();
    let mut expected = json_aggregate(&metric, &originals);
    expected.add_json("not json").unwrap_err();
    assert_eq!(summary(&aggregator), summary(&expected));
    std::fs::remove_file(&path).unwrap();
    // An exported file's counts are added once per call (once per file).
    let mut rejected = localdp::RejectionCounts::default();
    rejected.add(Rejection::OutOfRange, 2).unwrap();
    let mut writer = localdp_arrow::ParquetWriter::new(std::fs::File::create(&path).unwrap(), &metric, config, 100).unwrap();
    writer.write(&batch).unwrap();
    writer.finish(&rejected).unwrap();
    let file = localdp_arrow::ParquetFile::open(&path).unwrap();
    let mut aggregator = Aggregator::new(metric.clone());
    file.read_into(&mut aggregator, 0..file.row_groups()).unwrap();
    file.add_exported_rejections(&mut aggregator).unwrap();
    assert_eq!(aggregator.rejected().get(Rejection::OutOfRange), 2);
    assert_eq!(aggregator.n(), 500);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn hostile_files_are_errors() {
    let metric = Metric::from_json(PROTOCOLS[0].0).unwrap();
    let mut aggregator = Aggregator::new(metric.clone());
    let not_parquet = temp_path("not.parquet");
    std::fs::write(&not_parquet, b"{\"version\":1}\n").unwrap();
    let error = localdp_arrow::ParquetFile::open(&not_parquet).unwrap_err();
    assert!(matches!(error, localdp_arrow::Error::Parquet(_)), "{error}");
    let error = localdp_arrow::ParquetFile::open(&temp_path("missing.parquet")).unwrap_err();
    assert!(matches!(error, localdp_arrow::Error::Io { .. }), "{error}");

    // Row groups the file lacks; counts under localdp.rejected that are not counts.
    let path = temp_path("small.parquet");
    let batch = batch_of(&metric, &reports(PROTOCOLS[0].0, PROTOCOLS[0].1, 10, 1));
    let file = std::fs::File::create(&path).unwrap();
    let mut writer = localdp_arrow::ParquetWriter::new(file, &metric, PROTOCOLS[0].0, 100).unwrap();
    writer.write(&batch).unwrap();
    writer.finish(&localdp::RejectionCounts::default()).unwrap();
    let small = localdp_arrow::ParquetFile::open(&path).unwrap();
    let error = small.read_into(&mut aggregator, 0..2).unwrap_err();
    assert_eq!(error.to_string(), "row groups 0..2 requested, the file has 1");
    assert_eq!(aggregator.n(), 0);
    assert_eq!(small.exported_rejections().unwrap(), localdp::RejectionCounts::default());
    for (text, problem) in [("[1]", "not a JSON object"), (r#"{"lost":1}"#, "an unknown reason"), (r#"{"malformed":-1}"#, "a count"), (r#"{"malformed":18446744073709551615}"#, "too large")] {
        // Written by plain Parquet, as any tool could.
        let properties = parquet::file::properties::WriterProperties::builder()
            .set_key_value_metadata(Some(vec![parquet::file::metadata::KeyValue::new("localdp.rejected".into(), text.to_string())]))
            .build();
        let file = std::fs::File::create(&path).unwrap();
        let mut writer = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), Some(properties)).unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
        let file = localdp_arrow::ParquetFile::open(&path).unwrap();
        let error = file.exported_rejections().unwrap_err().to_string();
        assert!(error.starts_with("metadata \"localdp.rejected\": ") && error.contains(problem), "{error}");
        // The rows themselves still read.
        let mut aggregator = Aggregator::new(metric.clone());
        assert!(file.read_into(&mut aggregator, 0..1).unwrap().is_none());
        assert_eq!(aggregator.n(), 10);
    }
}

/// A number column's values as `u64` (`None` for a null).
fn numbers_of(column: &ArrayRef) -> Vec<Option<u64>> {
    use arrow_array::cast::AsArray;
    match column.data_type() {
        DataType::UInt32 => column.as_primitive::<arrow_array::types::UInt32Type>().iter().map(|v| v.map(u64::from)).collect(),
        _ => column.as_primitive::<arrow_array::types::UInt64Type>().iter().collect(),
    }
}

/// `column` as another reader would give it: `to` is the Arrow type (the
/// values are the same; only the layout or the width changes).
fn as_type(column: &ArrayRef, to: &DataType) -> ArrayRef {
    use arrow_array::cast::AsArray;
    use arrow_array::*;
    match (column.data_type(), to) {
        (DataType::Dictionary(..), DataType::Dictionary(key, value)) => {
            let ids = column.as_dictionary::<Int32Type>();
            let values: ArrayRef = match value.as_ref() {
                DataType::LargeUtf8 => Arc::new(LargeStringArray::from_iter(ids.values().as_string::<i32>().iter())),
                DataType::Utf8View => Arc::new(StringViewArray::from_iter(ids.values().as_string::<i32>().iter())),
                _ => ids.values().clone(),
            };
            let keys = ids.keys().iter().map(|k| k.map(|k| k as i64));
            match key.as_ref() {
                DataType::Int8 => Arc::new(DictionaryArray::new(keys.map(|k| k.map(|k| k as i8)).collect::<Int8Array>(), values)),
                DataType::UInt32 => Arc::new(DictionaryArray::new(keys.map(|k| k.map(|k| k as u32)).collect::<UInt32Array>(), values)),
                _ => Arc::new(DictionaryArray::new(keys.map(|k| k.map(|k| k as i16)).collect::<Int16Array>(), values)),
            }
        }
        (DataType::Dictionary(..), DataType::LargeUtf8) => {
            let ids = column.as_dictionary::<Int32Type>();
            let strings = ids.values().as_string::<i32>();
            Arc::new(ids.keys().iter().map(|k| k.map(|k| strings.value(k as usize))).collect::<LargeStringArray>())
        }
        (_, DataType::Int64) => Arc::new(numbers_of(column).into_iter().map(|v| v.map(|v| v as i64)).collect::<Int64Array>()),
        (_, DataType::Float64) => Arc::new(numbers_of(column).into_iter().map(|v| v.map(|v| v as f64)).collect::<Float64Array>()),
        (_, DataType::UInt8) => Arc::new(numbers_of(column).into_iter().map(|v| v.map(|v| v as u8)).collect::<UInt8Array>()),
        (DataType::FixedSizeBinary(_), DataType::LargeBinary) => {
            Arc::new(column.as_fixed_size_binary().iter().collect::<LargeBinaryArray>())
        }
        (DataType::Binary, DataType::LargeBinary) => Arc::new(column.as_binary::<i32>().iter().collect::<LargeBinaryArray>()),
        (DataType::FixedSizeBinary(_), DataType::BinaryView) => {
            Arc::new(column.as_fixed_size_binary().iter().collect::<BinaryViewArray>())
        }
        (DataType::Binary, DataType::BinaryView) => Arc::new(column.as_binary::<i32>().iter().collect::<BinaryViewArray>()),
        (DataType::List(_), DataType::LargeList(item)) => {
            let lists = column.as_list::<i32>();
            let items = as_type(lists.values(), item.data_type());
            let offsets = arrow_buffer::OffsetBuffer::<i64>::from_lengths(lists.offsets().lengths());
            Arc::new(LargeListArray::new(item.clone(), offsets, items, lists.nulls().cloned()))
        }
        _ => column.clone(),
    }
}

/// `batch` with each column of a name in `types` given that type.
fn retyped(batch: &RecordBatch, types: &[(&str, DataType)]) -> RecordBatch {
    let mut columns: Vec<(String, ArrayRef)> = Vec::new();
    for (field, column) in batch.schema().fields().iter().zip(batch.columns()) {
        let column = match types.iter().find(|(name, _)| name == field.name()) {
            Some((_, to)) => as_type(column, to),
            None => column.clone(),
        };
        columns.push((field.name().clone(), column));
    }
    RecordBatch::try_from_iter_with_nullable(columns.into_iter().map(|(n, c)| (n, c, true))).unwrap()
}

#[test]
fn columns_as_pandas_polars_and_duckdb_give_them_count_as_the_schemas() {
    use DataType::*;
    let item = |t: DataType| Arc::new(Field::new("item", t, true));
    let dictionary = |k: DataType, v: DataType| Dictionary(Box::new(k), Box::new(v));
    // pandas (category id, Int64 numbers), Polars (Categorical id, views, large lists, a
    // Float64 value as a frame with nulls has), and a plain string id.
    let readers: [Vec<(&str, DataType)>; 3] = [
        vec![("id", dictionary(Int8, LargeUtf8)), ("value", Int64), ("seed", Int64), ("cohort", Int64), ("bits", LargeBinary),
             ("attributes", LargeList(item(Int64))), ("values", LargeList(item(Int64)))],
        vec![("id", dictionary(UInt32, Utf8View)), ("value", Float64), ("seed", Int64), ("cohort", Float64), ("bits", BinaryView),
             ("attributes", LargeList(item(Float64))), ("values", LargeList(item(Int64)))],
        vec![("id", LargeUtf8), ("value", Int64), ("seed", Float64), ("cohort", Int64), ("bits", LargeBinary)],
    ];
    for (config, values) in PROTOCOLS {
        let metric = Metric::from_json(config).unwrap();
        let originals = reports(config, values, 300, 14);
        let batch = batch_of(&metric, &originals);
        let expected = summary(&json_aggregate(&metric, &originals));
        for types in &readers {
            let read = retyped(&batch, types);
            localdp_arrow::check_schema(&read.schema()).unwrap();
            let mut aggregator = Aggregator::new(metric.clone());
            assert!(add_record_batch(&mut aggregator, &read).is_none(), "{config} {types:?}");
            assert_eq!(summary(&aggregator), expected, "{config} {types:?}");
        }
    }
    // Narrow numbers where the values fit (GRR over 8 values: UInt8).
    let (config, values) = PROTOCOLS[0];
    let metric = Metric::from_json(config).unwrap();
    let originals = reports(config, values, 50, 15);
    let mut aggregator = Aggregator::new(metric.clone());
    add_record_batch(&mut aggregator, &retyped(&batch_of(&metric, &originals), &[("value", UInt8), ("id", dictionary(Int16, Utf8))]));
    assert_eq!(summary(&aggregator), summary(&json_aggregate(&metric, &originals)));
}

#[test]
fn values_that_do_not_fit_make_their_rows_malformed_and_no_other() {
    use arrow_array::{Float64Array, Int64Array, LargeListArray};
    let (config, values) = PROTOCOLS[3]; // blh: value and seed
    let metric = Metric::from_json(config).unwrap();
    let batch = batch_of(&metric, &reports(config, values, 6, 16));
    let value = Float64Array::from(vec![Some(1.0), Some(1.5), Some(-1.0), None, Some(f64::NAN), Some(0.0)]);
    let seed = Int64Array::from(vec![7, 7, 7, 7, 7, 1 << 40]);
    let hostile = with_column(&with_column(&batch, "value", Arc::new(value), true), "seed", Arc::new(seed), false);
    let mut aggregator = Aggregator::new(metric.clone());
    let (row, _) = add_record_batch(&mut aggregator, &hostile).unwrap();
    assert_eq!((row, aggregator.n(), aggregator.rejected().get(Rejection::Malformed)), (1, 1, 5));

    // A list with a null or negative item: that row alone.
    let (config, values) = PROTOCOLS[8]; // dbitflip
    let metric = Metric::from_json(config).unwrap();
    let batch = batch_of(&metric, &reports(config, values, 3, 17));
    let wide = as_type(batch.column_by_name("values").unwrap(), &DataType::LargeList(Arc::new(Field::new("item", DataType::Int64, true))));
    let lists = wide.as_any().downcast_ref::<LargeListArray>().unwrap();
    let mut items: Vec<Option<i64>> = lists.values().as_any().downcast_ref::<Int64Array>().unwrap().iter().collect();
    items[0] = Some(-1);
    let items = Arc::new(Int64Array::from(items));
    let lists = LargeListArray::new(Arc::new(Field::new("item", DataType::Int64, true)), lists.offsets().clone(), items, None);
    let mut aggregator = Aggregator::new(metric);
    add_record_batch(&mut aggregator, &with_column(&batch, "values", Arc::new(lists), false));
    assert_eq!((aggregator.n(), aggregator.rejected().get(Rejection::Malformed)), (2, 1));
}

#[test]
fn a_column_that_cannot_hold_reports_is_named_before_anything_is_counted() {
    let (config, values) = PROTOCOLS[0];
    let metric = Metric::from_json(config).unwrap();
    let batch = batch_of(&metric, &reports(config, values, 3, 18));
    let text = with_column(&batch, "value", Arc::new(StringArray::from(vec!["1"; 3])), false);
    let error = localdp_arrow::check_schema(&text.schema()).unwrap_err();
    assert!(
        matches!(&error, localdp_arrow::Error::ColumnType { column: "value", found, .. } if found == "Utf8"),
        "{error}"
    );
    assert_eq!(error.to_string(), "column \"value\" is Utf8, expected whole numbers: an integer column (or a float column of whole numbers)");
    let numbers = with_column(&batch, "id", Arc::new(UInt64Array::from(vec![1; 3])), false);
    assert!(localdp_arrow::check_schema(&numbers.schema()).unwrap_err().to_string().starts_with("column \"id\" is UInt64, expected a string"));
    let no_id = batch.project(&[1]).unwrap();
    assert!(matches!(localdp_arrow::check_schema(&no_id.schema()), Err(localdp_arrow::Error::MissingId)));
    // Other columns are not the schema's: any type.
    let extra = RecordBatch::try_from_iter([("id", batch.column(0).clone()), ("day", Arc::new(StringArray::from(vec!["x"; 3])) as _)]).unwrap();
    localdp_arrow::check_schema(&extra.schema()).unwrap();
}

#[test]
fn files_of_every_codec_and_of_dataframe_types_read_as_their_reports() {
    use parquet::basic::{BrotliLevel, Compression, GzipLevel, ZstdLevel};
    use parquet::file::properties::WriterProperties;
    let (config, values) = PROTOCOLS[4]; // olh: value and seed
    let metric = Metric::from_json(config).unwrap();
    let originals = reports(config, values, 400, 19);
    // As pandas writes a frame: Int64 numbers, a plain string id.
    let batch = retyped(&batch_of(&metric, &originals), &[("value", DataType::Int64), ("seed", DataType::Int64), ("id", DataType::LargeUtf8)]);
    let codecs = [
        Compression::SNAPPY,
        Compression::GZIP(GzipLevel::default()),
        Compression::LZ4,
        Compression::LZ4_RAW,
        Compression::BROTLI(BrotliLevel::default()),
        Compression::ZSTD(ZstdLevel::default()),
        Compression::UNCOMPRESSED,
    ];
    for (k, codec) in codecs.into_iter().enumerate() {
        let path = temp_path(&format!("codec-{k}.parquet"));
        let properties = WriterProperties::builder().set_compression(codec).build();
        let mut writer = parquet::arrow::ArrowWriter::try_new(std::fs::File::create(&path).unwrap(), batch.schema(), Some(properties)).unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
        let file = localdp_arrow::ParquetFile::open(&path).unwrap();
        localdp_arrow::check_schema(file.schema()).unwrap();
        let mut aggregator = Aggregator::new(metric.clone());
        assert!(file.read_into(&mut aggregator, 0..file.row_groups()).unwrap().is_none(), "{codec:?}");
        assert_eq!(summary(&aggregator), summary(&json_aggregate(&metric, &originals)), "{codec:?}");
        std::fs::remove_file(&path).unwrap();
    }
}
