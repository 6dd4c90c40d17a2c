//! An OTLP/HTTP receiver for the release tests, decoding with the official
//! protobuf definitions (`opentelemetry-proto`): `POST /v1/traces` and
//! `/v1/metrics`, each answered `200` with an empty protobuf body, as a
//! collector does. What it received is kept, flattened, for assertions.
//! And an endpoint that accepts connections and never answers, for the
//! cost of a dead collector.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::metrics::v1::{metric, number_data_point};
use prost::Message;

/// A span as received: hex ids, attributes as strings.
#[derive(Clone, Debug)]
pub struct ReceivedSpan {
    /// Its name.
    pub name: String,
    /// `SPAN_KIND_CLIENT` is 3, `SPAN_KIND_INTERNAL` 1.
    pub kind: i32,
    /// Its trace, in hex.
    pub trace_id: String,
    /// Its own id, in hex.
    pub span_id: String,
    /// Its parent's id, in hex (empty for a root).
    pub parent_span_id: String,
    /// Its attributes, each as a string.
    pub attributes: HashMap<String, String>,
    /// `STATUS_CODE_ERROR` is 2.
    pub status_code: i32,
    /// The status's description.
    pub status_message: String,
    /// The span ids it links to.
    pub links: Vec<String>,
    /// The attributes of the resource that sent it.
    pub resource: HashMap<String, String>,
}

impl ReceivedSpan {
    /// An attribute, if present.
    pub fn attr(&self, key: &str) -> Option<&str> {
        self.attributes.get(key).map(String::as_str)
    }
}

/// One data point of a metric as received.
#[derive(Clone, Debug)]
pub struct ReceivedPoint {
    /// The metric's name.
    pub metric: String,
    /// Its unit.
    pub unit: String,
    /// The point's attributes, each as a string.
    pub attributes: HashMap<String, String>,
    /// Sum or gauge value; for a histogram, its sum.
    pub value: f64,
    /// For a histogram, its count.
    pub count: u64,
}

#[derive(Default)]
struct Received {
    spans: Vec<ReceivedSpan>,
    points: Vec<ReceivedPoint>,
    requests: u64,
}

/// The receiver (see the module docs), listening until dropped with the
/// test process.
pub struct Receiver {
    addr: SocketAddr,
    received: Arc<Mutex<Received>>,
}

impl Receiver {
    /// Listens on a free port of 127.0.0.1.
    pub fn start() -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the receiver");
        let addr = listener.local_addr().expect("address");
        let received = Arc::new(Mutex::new(Received::default()));
        let keep = received.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let keep = keep.clone();
                std::thread::spawn(move || serve(stream, &keep));
            }
        });
        Receiver { addr, received }
    }

    /// The base URL, for `OTEL_EXPORTER_OTLP_ENDPOINT`.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The spans received so far.
    pub fn spans(&self) -> Vec<ReceivedSpan> {
        self.received.lock().expect("received").spans.clone()
    }

    /// The metric points received so far (every export's, in order).
    pub fn points(&self) -> Vec<ReceivedPoint> {
        self.received.lock().expect("received").points.clone()
    }

    /// Waits up to `limit` for a span named `name`.
    pub fn wait_for_span(&self, name: &str, limit: Duration) -> Option<ReceivedSpan> {
        let until = Instant::now() + limit;
        loop {
            if let Some(span) = self.spans().into_iter().find(|s| s.name == name) {
                return Some(span);
            }
            if Instant::now() > until {
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// An endpoint that accepts connections, reads what comes, and never
/// answers: the collector that hangs.
pub fn black_hole() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind the black hole");
    let addr = listener.local_addr().expect("address");
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut stream = stream;
                let mut sink = [0u8; 65536];
                while matches!(stream.read(&mut sink), Ok(n) if n > 0) {}
            });
        }
    });
    format!("http://{addr}")
}

/// Serves one connection's requests (HTTP/1.1, keep-alive).
fn serve(stream: TcpStream, received: &Mutex<Received>) {
    let mut writer = match stream.try_clone() {
        Ok(writer) => writer,
        Err(_) => return,
    };
    let mut reader = BufReader::new(stream);
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let path = request_line
            .split_whitespace()
            .nth(1)
            .unwrap_or("")
            .to_string();
        let mut length = 0usize;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0u8; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        take(&path, &body, received);
        let answer =
            b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
        if writer.write_all(answer).is_err() {
            return;
        }
    }
}

fn take(path: &str, body: &[u8], received: &Mutex<Received>) {
    let mut received = received.lock().expect("received");
    received.requests += 1;
    match path {
        "/v1/traces" => {
            let Ok(request) = ExportTraceServiceRequest::decode(body) else {
                panic!("a trace export that is not OTLP protobuf");
            };
            for resource_spans in request.resource_spans {
                let resource = resource_spans
                    .resource
                    .map(|r| attributes(&r.attributes))
                    .unwrap_or_default();
                for scope in resource_spans.scope_spans {
                    for span in scope.spans {
                        let status = span.status.unwrap_or_default();
                        received.spans.push(ReceivedSpan {
                            name: span.name,
                            kind: span.kind,
                            trace_id: hex(&span.trace_id),
                            span_id: hex(&span.span_id),
                            parent_span_id: hex(&span.parent_span_id),
                            attributes: attributes(&span.attributes),
                            status_code: status.code,
                            status_message: status.message,
                            links: span.links.iter().map(|l| hex(&l.span_id)).collect(),
                            resource: resource.clone(),
                        });
                    }
                }
            }
        }
        "/v1/metrics" => {
            let Ok(request) = ExportMetricsServiceRequest::decode(body) else {
                panic!("a metrics export that is not OTLP protobuf");
            };
            for resource_metrics in request.resource_metrics {
                for scope in resource_metrics.scope_metrics {
                    for m in scope.metrics {
                        let point =
                            |attributes: &[KeyValue], value: f64, count: u64| ReceivedPoint {
                                metric: m.name.clone(),
                                unit: m.unit.clone(),
                                attributes: self::attributes(attributes),
                                value,
                                count,
                            };
                        let number = |v: &Option<number_data_point::Value>| match v {
                            Some(number_data_point::Value::AsDouble(d)) => *d,
                            Some(number_data_point::Value::AsInt(i)) => *i as f64,
                            None => 0.0,
                        };
                        let points: Vec<ReceivedPoint> = match &m.data {
                            Some(metric::Data::Sum(sum)) => sum
                                .data_points
                                .iter()
                                .map(|p| point(&p.attributes, number(&p.value), 0))
                                .collect(),
                            Some(metric::Data::Gauge(gauge)) => gauge
                                .data_points
                                .iter()
                                .map(|p| point(&p.attributes, number(&p.value), 0))
                                .collect(),
                            Some(metric::Data::Histogram(h)) => h
                                .data_points
                                .iter()
                                .map(|p| point(&p.attributes, p.sum.unwrap_or(0.0), p.count))
                                .collect(),
                            _ => Vec::new(),
                        };
                        received.points.extend(points);
                    }
                }
            }
        }
        _ => {}
    }
}

fn attributes(list: &[KeyValue]) -> HashMap<String, String> {
    list.iter()
        .map(|kv| (kv.key.clone(), value(kv.value.as_ref())))
        .collect()
}

fn value(value: Option<&AnyValue>) -> String {
    match value.and_then(|v| v.value.as_ref()) {
        Some(any_value::Value::StringValue(s)) => s.clone(),
        Some(any_value::Value::BoolValue(b)) => b.to_string(),
        Some(any_value::Value::IntValue(i)) => i.to_string(),
        Some(any_value::Value::DoubleValue(d)) => d.to_string(),
        Some(other) => format!("{other:?}"),
        None => String::new(),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
