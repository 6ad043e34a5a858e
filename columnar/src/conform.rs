//! Columns as readers and dataframe libraries give them, read as the
//! schema's: the one place both Arrow data and Parquet files are widened.
//!
//! pandas reads the `id` column as a `category` (a dictionary with `Int8`
//! keys and `LargeUtf8` values), Polars as a `Categorical` or `Enum` (`UInt32`
//! keys), a dataframe makes `value` an `Int64`, or a `Float64` once it holds
//! a null; Polars exports `BinaryView` and `LargeList`. Each is read as the
//! schema's type ([`crate::schema`]), and a value that does not fit (a
//! negative or fractional number, a seed above `u32::MAX`, a list with a
//! null item) becomes a null, so that its row alone is counted `malformed`,
//! as the same report in JSON is. A column of a type that holds no such
//! values (text in `value`, numbers in `id`) is [`Error::ColumnType`]:
//! [`check_schema`] finds it before any row is counted.

use crate::schema::{ATTRIBUTES, BITS, COHORT, ID, SEED, VALUE, VALUES};
use crate::error::{type_error, Error, Result};
use arrow_array::cast::AsArray;
use arrow_array::types::{
    ArrowDictionaryKeyType, Float16Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type,
    UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{
    new_null_array, Array, ArrayRef, ArrowPrimitiveType, BinaryArray, DictionaryArray, GenericListArray, Int32Array,
    ListArray, OffsetSizeTrait, RecordBatch, RecordBatchOptions, UInt32Array, UInt64Array,
};
use arrow_buffer::{ArrowNativeType, NullBuffer, OffsetBuffer};
use arrow_schema::{DataType, Field, Schema};
use std::sync::Arc;

/// The largest float of each width read as a whole number: 2^11, 2^24 and
/// 2^53 for 16, 32 and 64 bits (their significands' bits, and one). Above
/// it a float no longer holds every integer, so it may be another number
/// rounded (a seed of 4,000,000,001 in a `Float32` column is 4,000,000,000).
const EXACT_FLOAT16: f64 = 2_048.0;
const EXACT_FLOAT32: f64 = 16_777_216.0;
const EXACT_FLOAT64: f64 = 9_007_199_254_740_992.0;

/// What the accepted types of each column are, for errors.
const ID_TYPES: &str = "a string column (Utf8, LargeUtf8, Utf8View) or a dictionary of strings (a category)";
const NUMBER_TYPES: &str = "whole numbers: an integer column (or a float column of whole numbers)";
const BITS_TYPES: &str = "bytes: FixedSizeBinary, Binary, LargeBinary or BinaryView";
const LIST_TYPES: &str = "a list of whole numbers (List or LargeList of integers)";

/// The number columns and the width the schema gives them.
#[derive(Clone, Copy, PartialEq)]
enum Width {
    U32,
    U64,
}

/// How a column is read.
enum Read {
    /// As it is: it already has the schema's layout.
    AsIs,
    /// `id`: a dictionary with keys of another width, re-keyed as `Int32`.
    Keys,
    /// Numbers of another type, or a list of them, as the schema's width.
    Numbers(Width),
    List(Width),
    /// Bytes of another layout as `Binary`.
    Bytes,
}

fn is_string(data_type: &DataType) -> bool {
    matches!(data_type, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
}

fn is_number(data_type: &DataType) -> bool {
    data_type.is_integer() || data_type.is_floating() || data_type == &DataType::Null
}

/// How column `name` of type `data_type` is read, `None` for a column that
/// is not the schema's (ignored), or the error naming it.
fn plan(name: &str, data_type: &DataType) -> Result<Option<(&'static str, Read)>> {
    let (column, width) = match name {
        ID => {
            let read = match data_type {
                t if is_string(t) => Read::AsIs,
                DataType::Dictionary(key, value) if is_string(value) && key.as_ref() == &DataType::Int32 => Read::AsIs,
                DataType::Dictionary(key, value) if is_string(value) && key.is_integer() => Read::Keys,
                _ => return Err(type_error(ID, ID_TYPES, data_type)),
            };
            return Ok(Some((ID, read)));
        }
        BITS => {
            let read = match data_type {
                DataType::FixedSizeBinary(_) | DataType::Binary => Read::AsIs,
                DataType::LargeBinary | DataType::BinaryView | DataType::Null => Read::Bytes,
                _ => return Err(type_error(BITS, BITS_TYPES, data_type)),
            };
            return Ok(Some((BITS, read)));
        }
        VALUE => (VALUE, Width::U64),
        SEED => (SEED, Width::U32),
        COHORT => (COHORT, Width::U32),
        ATTRIBUTES | VALUES => {
            let (column, width) = if name == ATTRIBUTES { (ATTRIBUTES, Width::U32) } else { (VALUES, Width::U64) };
            return match data_type {
                DataType::List(item) | DataType::LargeList(item) if is_number(item.data_type()) => {
                    Ok(Some((column, Read::List(width))))
                }
                DataType::Null => Ok(Some((column, Read::List(width)))),
                _ => Err(type_error(column, LIST_TYPES, data_type)),
            };
        }
        _ => return Ok(None),
    };
    if data_type == &width.data_type() {
        Ok(Some((column, Read::AsIs)))
    } else if is_number(data_type) {
        Ok(Some((column, Read::Numbers(width))))
    } else {
        Err(type_error(column, NUMBER_TYPES, data_type))
    }
}

impl Width {
    fn data_type(self) -> DataType {
        match self {
            Width::U32 => DataType::UInt32,
            Width::U64 => DataType::UInt64,
        }
    }
}

/// Checks that every column of `schema` that the reports' schema names has
/// a type [`conform`] reads, and that there is an `id` column: a batch of
/// this schema is then counted row by row, never refused as a whole.
///
/// ```
/// use arrow_schema::{DataType, Field, Schema};
/// let pandas = Schema::new(vec![
///     Field::new("id", DataType::Dictionary(Box::new(DataType::Int8), Box::new(DataType::LargeUtf8)), true),
///     Field::new("value", DataType::Int64, true),
///     Field::new("day", DataType::Utf8, true), // not the schema's: ignored
/// ]);
/// assert!(localdp_arrow::check_schema(&pandas).is_ok());
/// let text = Schema::new(vec![Field::new("id", DataType::Utf8, false), Field::new("value", DataType::Utf8, false)]);
/// let error = localdp_arrow::check_schema(&text).unwrap_err().to_string();
/// assert!(error.starts_with("column \"value\" is Utf8, expected whole numbers"), "{error}");
/// ```
pub fn check_schema(schema: &Schema) -> Result<()> {
    schema.field_with_name(ID).map_err(|_| Error::MissingId)?;
    for field in schema.fields() {
        plan(field.name(), field.data_type())?;
    }
    Ok(())
}

/// `batch` with its columns in the schema's types: a column that has them
/// is kept as it is (no copy), the others are read as the module's docs
/// say. A column that cannot be read is [`Error::ColumnType`] (see
/// [`check_schema`]).
///
/// ```
/// use arrow_array::{Array, Float64Array, Int64Array, RecordBatch, StringArray};
/// use std::sync::Arc;
/// let batch = RecordBatch::try_from_iter([
///     ("id", Arc::new(StringArray::from(vec!["grr:1.0:c24f8ea73c4690e4"; 3])) as _),
///     ("value", Arc::new(Float64Array::from(vec![Some(2.0), Some(2.5), None])) as _),
///     ("seed", Arc::new(Int64Array::from(vec![7, -1, 1 << 40])) as _),
/// ])?;
/// let read = localdp_arrow::conform(&batch)?;
/// let value = read.column_by_name("value").unwrap();
/// assert_eq!(value.data_type(), &arrow_schema::DataType::UInt64);
/// assert_eq!(value.null_count(), 2); // 2.5 and the null: those rows are malformed
/// assert_eq!(read.column_by_name("seed").unwrap().null_count(), 2); // -1 and 2^40
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn conform(batch: &RecordBatch) -> Result<RecordBatch> {
    let schema = batch.schema();
    let mut fields: Vec<Arc<Field>> = Vec::with_capacity(batch.num_columns());
    let mut columns = Vec::with_capacity(batch.num_columns());
    let mut changed = false;
    for (field, column) in schema.fields().iter().zip(batch.columns()) {
        let read = match plan(field.name(), field.data_type())? {
            None => None,
            Some((name, read)) => convert(name, column, read)?,
        };
        match read {
            Some(new) => {
                changed = true;
                fields.push(Arc::new(field.as_ref().clone().with_data_type(new.data_type().clone()).with_nullable(true)));
                columns.push(new);
            }
            None => {
                fields.push(field.clone());
                columns.push(column.clone());
            }
        }
    }
    if !changed {
        return Ok(batch.clone());
    }
    let schema = Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()));
    let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
    Ok(RecordBatch::try_new_with_options(schema, columns, &options)?)
}

/// `column` read as `read` says (`None`: as it is).
fn convert(name: &'static str, column: &ArrayRef, read: Read) -> Result<Option<ArrayRef>> {
    Ok(Some(match read {
        Read::AsIs => return Ok(None),
        Read::Keys => rekeyed(column),
        Read::Numbers(width) => numbers(column, width),
        Read::List(width) => match column.data_type() {
            DataType::List(_) => whole_lists(name, column.as_list::<i32>(), width)?,
            DataType::LargeList(_) => whole_lists(name, column.as_list::<i64>(), width)?,
            _ => new_null_array(&DataType::List(crate::schema::item(width.data_type())), column.len()),
        },
        Read::Bytes => {
            let rows: Vec<Option<&[u8]>> = match column.data_type() {
                DataType::LargeBinary => column.as_binary::<i64>().iter().collect(),
                DataType::BinaryView => column.as_binary_view().iter().collect(),
                _ => vec![None; column.len()],
            };
            let bytes: usize = rows.iter().flatten().map(|r| r.len()).sum();
            if i32::try_from(bytes).is_err() {
                return Err(type_error(name, "at most 2 GiB of bits per batch", column.data_type()));
            }
            Arc::new(BinaryArray::from(rows))
        }
    }))
}

/// A dictionary's keys as `Int32` (a key outside the dictionary, or that
/// does not fit, is null: its row's identity is missing).
fn rekeyed(column: &ArrayRef) -> ArrayRef {
    fn keys<K: ArrowDictionaryKeyType>(column: &ArrayRef) -> ArrayRef {
        let dictionary = column.as_dictionary::<K>();
        let size = dictionary.values().len();
        let keys: Int32Array = dictionary
            .keys()
            .iter()
            .map(|k| k.and_then(|k| k.to_usize()).filter(|&k| k < size).and_then(|k| i32::try_from(k).ok()))
            .collect();
        let rekeyed = DictionaryArray::<Int32Type>::try_new(keys, dictionary.values().clone());
        Arc::new(rekeyed.expect("every key is in the dictionary"))
    }
    let DataType::Dictionary(key, _) = column.data_type() else { unreachable!("planned for dictionaries only") };
    match key.as_ref() {
        DataType::Int8 => keys::<Int8Type>(column),
        DataType::Int16 => keys::<Int16Type>(column),
        DataType::Int64 => keys::<Int64Type>(column),
        DataType::UInt8 => keys::<UInt8Type>(column),
        DataType::UInt16 => keys::<UInt16Type>(column),
        DataType::UInt32 => keys::<UInt32Type>(column),
        DataType::UInt64 => keys::<UInt64Type>(column),
        _ => keys::<Int32Type>(column),
    }
}

/// A number column as `UInt64`: each value that is a whole number in
/// range, the others null.
fn wide(column: &dyn Array) -> UInt64Array {
    fn whole<T: ArrowPrimitiveType>(column: &dyn Array, to_u64: impl Fn(T::Native) -> Option<u64>) -> UInt64Array {
        column.as_primitive::<T>().unary_opt(to_u64)
    }
    let float = |x: f64, exact: f64| (x >= 0.0 && x <= exact && x.fract() == 0.0).then_some(x as u64);
    match column.data_type() {
        DataType::Int8 => whole::<Int8Type>(column, |v| u64::try_from(v).ok()),
        DataType::Int16 => whole::<Int16Type>(column, |v| u64::try_from(v).ok()),
        DataType::Int32 => whole::<Int32Type>(column, |v| u64::try_from(v).ok()),
        DataType::Int64 => whole::<Int64Type>(column, |v| u64::try_from(v).ok()),
        DataType::UInt8 => whole::<UInt8Type>(column, |v| Some(u64::from(v))),
        DataType::UInt16 => whole::<UInt16Type>(column, |v| Some(u64::from(v))),
        DataType::UInt32 => whole::<UInt32Type>(column, |v| Some(u64::from(v))),
        DataType::UInt64 => column.as_primitive::<UInt64Type>().clone(),
        DataType::Float16 => whole::<Float16Type>(column, |v| float(f64::from(v), EXACT_FLOAT16)),
        DataType::Float32 => whole::<Float32Type>(column, |v| float(f64::from(v), EXACT_FLOAT32)),
        DataType::Float64 => whole::<Float64Type>(column, |v| float(v, EXACT_FLOAT64)),
        _ => UInt64Array::new_null(column.len()),
    }
}

/// A number column as the schema's width (a value out of range is null).
fn numbers(column: &dyn Array, width: Width) -> ArrayRef {
    let wide = wide(column);
    match width {
        Width::U64 => Arc::new(wide),
        Width::U32 => Arc::new(wide.unary_opt::<_, UInt32Type>(|v| u32::try_from(v).ok())),
    }
}

/// Lists of numbers as `List` of the schema's width: a row with an item
/// that is null or not a whole number in range is null.
fn whole_lists<O: OffsetSizeTrait>(name: &'static str, lists: &GenericListArray<O>, width: Width) -> Result<ArrayRef> {
    let items = wide(lists.values().as_ref());
    let fits = |i: usize| items.is_valid(i) && (width == Width::U64 || u32::try_from(items.value(i)).is_ok());
    let mut offsets = Vec::with_capacity(lists.len() + 1);
    let mut kept: Vec<u64> = Vec::with_capacity(items.len());
    let mut valid = Vec::with_capacity(lists.len());
    offsets.push(0i32);
    for (row, range) in lists.offsets().windows(2).enumerate() {
        let (start, end) = (range[0].as_usize(), range[1].as_usize());
        let ok = lists.is_valid(row) && (start..end).all(fits);
        if ok {
            kept.extend(&items.values()[start..end]);
        }
        valid.push(ok);
        let end = i32::try_from(kept.len())
            .map_err(|_| type_error(name, "at most 2^31 list items per batch", lists.data_type()))?;
        offsets.push(end);
    }
    let kept: ArrayRef = match width {
        Width::U64 => Arc::new(UInt64Array::from(kept)),
        Width::U32 => Arc::new(UInt32Array::from_iter_values(kept.into_iter().map(|v| v as u32))),
    };
    let offsets = OffsetBuffer::new(offsets.into());
    let list = ListArray::try_new(crate::schema::item(width.data_type()), offsets, kept, Some(NullBuffer::from(valid)));
    Ok(Arc::new(list.expect("offsets and items were built together")))
}

#[cfg(test)]
mod tests {
    use arrow_array::Array;

    #[test]
    fn floats_above_two_to_the_53_are_not_whole_numbers() {
        let column = arrow_array::Float64Array::from(vec![super::EXACT_FLOAT64, super::EXACT_FLOAT64 * 2.0, -0.0]);
        let read = super::wide(&column);
        assert_eq!(read.null_count(), 1);
    }

    #[test]
    fn narrower_floats_are_whole_numbers_up_to_their_own_exact_limits() {
        // A u32 seed in a Float32 column: 4,000,000,001 is stored as 4,000,000,000.
        let column = arrow_array::Float32Array::from(vec![16_777_216.0, 33_554_432.0, 4_000_000_001.0, 7.0]);
        assert_eq!(super::wide(&column).null_count(), 2);
        let column = arrow_array::Float16Array::from_iter_values([2048, 4096].map(arrow_buffer::ArrowNativeType::usize_as));
        assert_eq!(super::wide(&column).null_count(), 1);
    }
}
