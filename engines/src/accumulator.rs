//! The accumulators: one group ([`EstimateAccumulator`]) or many
//! ([`EstimateGroupsAccumulator`]), each group a [`localdp::Aggregator`] whose
//! intermediate state is its state bytes.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BinaryArray, BooleanArray, RecordBatch, StringArray, UInt32Array};
use datafusion::arrow::compute::{filter_record_batch, take_record_batch};
use datafusion::common::{DataFusionError, Result, ScalarValue};
use datafusion::logical_expr::{Accumulator, EmitTo, GroupsAccumulator};
use localdp::{Aggregator, Error, PostProcessing};

use crate::binding::Binding;
use crate::name::NAME;

/// Adds every row of `batch` (rows a report cannot be made of are rejected
/// and counted by reason, as `localdp aggregate` counts them).
fn add(aggregator: &mut Aggregator, batch: &RecordBatch) {
    // The first rejection is for `--strict`; SQL counts them all instead.
    let _first_rejection = localdp_arrow::add_record_batch(aggregator, batch);
}

/// The estimate as `localdp aggregate` prints it (compact JSON), or None
/// when no report was accepted.
fn estimate(aggregator: &Aggregator) -> Result<Option<String>> {
    match aggregator.estimate(PostProcessing::None) {
        Ok(estimate) => Ok(Some(serde_json::to_string(&estimate).map_err(|e| DataFusionError::External(Box::new(e)))?)),
        Err(Error::NoReports) => Ok(None),
        Err(e) => Err(DataFusionError::Execution(format!("{NAME}: {e}"))),
    }
}

/// Merges the state bytes in `states` (nulls are groups without state).
fn merge(binding: &Binding, aggregator: &mut Aggregator, bytes: &[u8]) -> Result<()> {
    let other = binding.aggregator_from_bytes(bytes)?;
    aggregator.merge(&other).map_err(|e| DataFusionError::Execution(format!("{NAME}: merging partial states: {e}")))
}

/// `ldp_estimate` over one group.
#[derive(Debug)]
pub(crate) struct EstimateAccumulator {
    binding: Arc<Binding>,
    aggregator: Aggregator,
}

impl EstimateAccumulator {
    pub(crate) fn new(binding: Arc<Binding>) -> Self {
        let aggregator = binding.aggregator();
        EstimateAccumulator { binding, aggregator }
    }
}

impl Accumulator for EstimateAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        add(&mut self.aggregator, &self.binding.batch(values)?);
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        for bytes in states[0].as_binary::<i32>().iter().flatten() {
            merge(&self.binding, &mut self.aggregator, bytes)?;
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![ScalarValue::Binary(Some(self.aggregator.to_bytes()))])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        Ok(ScalarValue::Utf8(estimate(&self.aggregator)?))
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.binding.state_size()
    }
}

/// `ldp_estimate` over many groups: rows are gathered per group (one `take`
/// per batch) and added a group's slice at a time.
pub(crate) struct EstimateGroupsAccumulator {
    binding: Arc<Binding>,
    groups: Vec<Aggregator>,
}

impl EstimateGroupsAccumulator {
    pub(crate) fn new(binding: Arc<Binding>) -> Self {
        EstimateGroupsAccumulator { binding, groups: Vec::new() }
    }

    fn grow(&mut self, total_num_groups: usize) {
        let binding = &self.binding;
        self.groups.resize_with(total_num_groups.max(self.groups.len()), || binding.aggregator());
    }
}

impl GroupsAccumulator for EstimateGroupsAccumulator {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> Result<()> {
        self.grow(total_num_groups);
        let batch = self.binding.batch(values)?;
        let selected = |row: usize| opt_filter.is_none_or(|f| f.is_valid(row) && f.value(row));
        // The common case (a file or row group holds one metric and day):
        // one group, the batch as it is.
        if let Some(&first) = group_indices.first() {
            if group_indices.iter().all(|&g| g == first) {
                let batch = match opt_filter {
                    Some(filter) => filter_record_batch(&batch, filter)?,
                    None => batch,
                };
                add(&mut self.groups[first], &batch);
                return Ok(());
            }
        }
        // Otherwise the selected rows in group order, then each group's run.
        let mut rows: Vec<u32> = (0..group_indices.len()).filter(|&r| selected(r)).map(|r| r as u32).collect();
        rows.sort_by_key(|&r| group_indices[r as usize]);
        let gathered = take_record_batch(&batch, &UInt32Array::from(rows.clone()))?;
        let mut start = 0;
        while start < rows.len() {
            let group = group_indices[rows[start] as usize];
            let end = start + rows[start..].iter().take_while(|&&r| group_indices[r as usize] == group).count();
            add(&mut self.groups[group], &gathered.slice(start, end - start));
            start = end;
        }
        Ok(())
    }

    fn merge_batch(&mut self, values: &[ArrayRef], group_indices: &[usize], total_num_groups: usize) -> Result<()> {
        self.grow(total_num_groups);
        let states = values[0].as_binary::<i32>();
        for (row, &group) in group_indices.iter().enumerate() {
            if states.is_valid(row) {
                merge(&self.binding, &mut self.groups[group], states.value(row))?;
            }
        }
        Ok(())
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        let estimates = emit_to.take_needed(&mut self.groups).iter().map(estimate).collect::<Result<StringArray>>()?;
        Ok(Arc::new(estimates))
    }

    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        let states: BinaryArray = emit_to.take_needed(&mut self.groups).iter().map(|a| Some(a.to_bytes())).collect();
        Ok(vec![Arc::new(states)])
    }

    /// Each selected row's own state (DataFusion's fallback when grouping
    /// first would not reduce the rows); rows filtered out have none (null).
    fn convert_to_state(&self, values: &[ArrayRef], opt_filter: Option<&BooleanArray>) -> Result<Vec<ArrayRef>> {
        let batch = self.binding.batch(values)?;
        let states: BinaryArray = (0..batch.num_rows())
            .map(|row| {
                opt_filter.is_none_or(|f| f.is_valid(row) && f.value(row)).then(|| {
                    let mut aggregator = self.binding.aggregator();
                    add(&mut aggregator, &batch.slice(row, 1));
                    aggregator.to_bytes()
                })
            })
            .collect();
        Ok(vec![Arc::new(states)])
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.groups.capacity() * (std::mem::size_of::<Aggregator>() + self.binding.state_size())
    }
}
