from .metrics import Counter, Enum, Gauge, Histogram, Info, Summary
from .metrics_core import (
    CounterMetricFamily, GaugeHistogramMetricFamily, GaugeMetricFamily,
    HistogramMetricFamily, InfoMetricFamily, Metric, StateSetMetricFamily,
    SummaryMetricFamily, UnknownMetricFamily, UntypedMetricFamily,
)
from .registry import CollectorRegistry, REGISTRY
from .samples import Exemplar, Sample, Timestamp

__all__ = (
    'CollectorRegistry',
    'Counter',
    'CounterMetricFamily',
    'Enum',
    'Exemplar',
    'Gauge',
    'GaugeHistogramMetricFamily',
    'GaugeMetricFamily',
    'Histogram',
    'HistogramMetricFamily',
    'Info',
    'InfoMetricFamily',
    'Metric',
    'REGISTRY',
    'Sample',
    'StateSetMetricFamily',
    'Summary',
    'SummaryMetricFamily',
    'Timestamp',
    'UnknownMetricFamily',
    'UntypedMetricFamily',
)
