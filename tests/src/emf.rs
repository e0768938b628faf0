//! Reads log lines as CloudWatch Logs reads Embedded Metric Format, written from the
//! specification (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html),
//! not from docflow's writer: a line is EMF only when the line itself is a JSON object
//! with an `_aws` member; every rule CloudWatch enforces is checked, and a line that
//! breaks one panics with the reason (CloudWatch would drop its metrics silently).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// The units CloudWatch accepts (`MetricDatum.Unit`).
pub const VALID_UNITS: &[&str] = &[
    "Seconds",
    "Microseconds",
    "Milliseconds",
    "Bytes",
    "Kilobytes",
    "Megabytes",
    "Gigabytes",
    "Terabytes",
    "Bits",
    "Kilobits",
    "Megabits",
    "Gigabits",
    "Terabits",
    "Percent",
    "Count",
    "Bytes/Second",
    "Kilobytes/Second",
    "Megabytes/Second",
    "Gigabytes/Second",
    "Terabytes/Second",
    "Bits/Second",
    "Kilobits/Second",
    "Megabits/Second",
    "Gigabits/Second",
    "Terabits/Second",
    "Count/Second",
    "None",
];

/// One metric datum CloudWatch would extract: namespace, metric name, unit, the full
/// dimension set (name → value) and the values.
#[derive(Debug, Clone, PartialEq)]
pub struct Datum {
    pub namespace: String,
    pub name: String,
    pub unit: String,
    pub dimensions: BTreeMap<String, String>,
    pub values: Vec<f64>,
}

/// The data CloudWatch extracts from `line`, `None` when the line is not EMF (not a
/// JSON object, or no `_aws`). Panics when the line is EMF but invalid.
pub fn extract(line: &str) -> Option<Vec<Datum>> {
    let Ok(Value::Object(root)) = serde_json::from_str::<Value>(line) else {
        return None;
    };
    let aws = root.get("_aws")?;
    assert!(
        line.len() <= 1_048_576,
        "an EMF event is at most 1 MB: {line}"
    );
    let aws = aws.as_object().expect("_aws must be an object");
    let timestamp = aws
        .get("Timestamp")
        .and_then(Value::as_i64)
        .expect("_aws.Timestamp must be an integer (epoch ms)");
    assert!(
        timestamp > 1_500_000_000_000,
        "Timestamp must be epoch milliseconds"
    );
    let directives = aws
        .get("CloudWatchMetrics")
        .and_then(Value::as_array)
        .expect("_aws.CloudWatchMetrics must be an array");
    let mut data = Vec::new();
    for directive in directives {
        data.extend(directive_data(&root, directive));
    }
    Some(data)
}

fn directive_data(root: &Map<String, Value>, directive: &Value) -> Vec<Datum> {
    let namespace = directive["Namespace"]
        .as_str()
        .expect("Namespace must be a string");
    assert!(
        !namespace.is_empty() && namespace.len() <= 255 && !namespace.starts_with(':'),
        "invalid Namespace {namespace:?}"
    );
    assert!(
        namespace
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || ".-_/#:".contains(c)),
        "Namespace {namespace:?} has characters CloudWatch refuses"
    );
    let sets = directive["Dimensions"]
        .as_array()
        .expect("Dimensions must be an array of dimension sets");
    let metrics = directive["Metrics"]
        .as_array()
        .expect("Metrics must be an array");
    assert!(
        metrics.len() <= 100,
        "at most 100 metrics per directive, got {}",
        metrics.len()
    );
    let mut resolved_sets = Vec::new();
    for set in sets {
        let names = set.as_array().expect("a dimension set is an array");
        assert!(
            names.len() <= 30,
            "at most 30 dimensions per set, got {}",
            names.len()
        );
        let mut dims = BTreeMap::new();
        for name in names {
            let name = name.as_str().expect("a dimension name is a string");
            let value = root
                .get(name)
                .unwrap_or_else(|| panic!("dimension {name:?} has no top-level member"))
                .as_str()
                .unwrap_or_else(|| panic!("dimension {name:?} must be a string value"));
            assert!(
                !value.is_empty() && value.len() <= 1024,
                "dimension value length"
            );
            dims.insert(name.to_owned(), value.to_owned());
        }
        resolved_sets.push(dims);
    }
    let mut data = Vec::new();
    for definition in metrics {
        let name = definition["Name"]
            .as_str()
            .expect("a metric definition has a Name");
        assert!(!name.is_empty() && name.len() <= 1024, "metric name length");
        let unit = match definition.get("Unit") {
            None => "None".to_owned(),
            Some(u) => {
                let u = u.as_str().expect("Unit must be a string");
                assert!(VALID_UNITS.contains(&u), "invalid unit {u:?} for {name}");
                u.to_owned()
            }
        };
        if let Some(resolution) = definition.get("StorageResolution") {
            assert!(
                resolution == 1 || resolution == 60,
                "StorageResolution is 1 or 60"
            );
        }
        let values = match root.get(name) {
            Some(Value::Number(n)) => vec![n.as_f64().unwrap()],
            Some(Value::Array(values)) => {
                assert!(
                    values.len() <= 100,
                    "at most 100 values per metric ({name}: {})",
                    values.len()
                );
                values
                    .iter()
                    .map(|v| {
                        v.as_f64()
                            .unwrap_or_else(|| panic!("{name}: values must be numbers"))
                    })
                    .collect()
            }
            other => panic!("metric {name} must be a number or array of numbers, got {other:?}"),
        };
        for set in &resolved_sets {
            data.push(Datum {
                namespace: namespace.to_owned(),
                name: name.to_owned(),
                unit: unit.clone(),
                dimensions: set.clone(),
                values: values.clone(),
            });
        }
    }
    data
}

/// Every datum of every EMF line among `lines` (other lines are skipped).
pub fn extract_all<S: AsRef<str>>(lines: &[S]) -> Vec<Datum> {
    lines
        .iter()
        .filter_map(|l| extract(l.as_ref()))
        .flatten()
        .collect()
}

/// The data of `lines`, queried like CloudWatch: by metric name and exact dimensions.
#[derive(Debug, Clone)]
pub struct Metrics(pub Vec<Datum>);

impl Metrics {
    pub fn of<S: AsRef<str>>(lines: &[S]) -> Self {
        Metrics(extract_all(lines))
    }

    /// All values of `name` with exactly these dimensions.
    pub fn values(&self, name: &str, dimensions: &[(&str, &str)]) -> Vec<f64> {
        let wanted: BTreeMap<String, String> = dimensions
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        self.0
            .iter()
            .filter(|d| d.name == name && d.dimensions == wanted)
            .flat_map(|d| d.values.clone())
            .collect()
    }

    /// The sum of `name` with exactly these dimensions (as the `Sum` statistic).
    pub fn sum(&self, name: &str, dimensions: &[(&str, &str)]) -> f64 {
        self.values(name, dimensions).iter().sum()
    }

    /// The unit `name` is written with (panics if written with two).
    pub fn unit(&self, name: &str) -> String {
        let units: std::collections::BTreeSet<&str> = self
            .0
            .iter()
            .filter(|d| d.name == name)
            .map(|d| d.unit.as_str())
            .collect();
        assert_eq!(units.len(), 1, "{name} written with units {units:?}");
        units.into_iter().next().unwrap().to_owned()
    }
}
