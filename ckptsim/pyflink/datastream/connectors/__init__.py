"""``pyflink.datastream.connectors``: the connectors ckptsim runs (``FileSource``,
``FileSink``, ``NumberSequenceSource``); the JVM connectors (Kafka, Pulsar, Kinesis,
Elasticsearch, JDBC, RabbitMQ, Cassandra) stop the program with what to use instead."""

from __future__ import annotations

from ckptsim.pyflink._unsupported import CONNECTORS, missing
from ckptsim.pyflink.datastream.connectors.base import DeliveryGuarantee, Sink, Source
from ckptsim.pyflink.datastream.connectors.file_system import (
    BucketAssigner,
    FileEnumeratorProvider,
    FileSink,
    FileSource,
    FileSourceBuilder,
    FileSplitAssignerProvider,
    OutputFileConfig,
    RollingPolicy,
    StreamFormat,
)
from ckptsim.pyflink.datastream.connectors.number_seq import NumberSequenceSource

_JVM_CONNECTORS = {
    "JdbcSink": "JDBC",
    "JdbcConnectionOptions": "JDBC",
    "JdbcExecutionOptions": "JDBC",
    "KafkaSource": "Kafka",
    "KafkaSink": "Kafka",
    "FlinkKafkaConsumer": "Kafka",
    "FlinkKafkaProducer": "Kafka",
    "Semantic": "Kafka",
    "DynamicKafkaSource": "Kafka",
    "DynamicKafkaSourceBuilder": "Kafka",
    "KafkaMetadataService": "Kafka",
    "KafkaRecordDeserializationSchema": "Kafka",
    "KafkaStreamSetSubscriber": "Kafka",
    "KafkaStreamSubscriber": "Kafka",
    "StreamPatternSubscriber": "Kafka",
    "SingleClusterTopicMetadataService": "Kafka",
    "PulsarSource": "Pulsar",
    "PulsarSourceBuilder": "Pulsar",
    "PulsarSink": "Pulsar",
    "StartCursor": "Pulsar",
    "StopCursor": "Pulsar",
    "RMQSource": "RabbitMQ",
    "RMQSink": "RabbitMQ",
    "RMQConnectionConfig": "RabbitMQ",
    "FlinkKinesisConsumer": "Kinesis",
    "KinesisStreamsSink": "Kinesis",
    "KinesisFirehoseSink": "Kinesis",
    "Elasticsearch6SinkBuilder": "Elasticsearch",
    "Elasticsearch7SinkBuilder": "Elasticsearch",
    "CassandraSink": "Cassandra",
    "HybridSource": "hybrid source",
}

__getattr__ = missing(
    "pyflink.datastream.connectors",
    {
        name: (f"{name} (the {system} connector)", CONNECTORS)
        for name, system in _JVM_CONNECTORS.items()
    },
)

__all__ = [
    "BucketAssigner",
    "DeliveryGuarantee",
    "FileEnumeratorProvider",
    "FileSink",
    "FileSource",
    "FileSourceBuilder",
    "FileSplitAssignerProvider",
    "NumberSequenceSource",
    "OutputFileConfig",
    "RollingPolicy",
    "Sink",
    "Source",
    "StreamFormat",
]
