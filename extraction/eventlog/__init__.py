"""Kafka as the event log (BRK-6): the consumer that commits only the contiguous durable
prefix, the ingress that takes requested records in, and the replay of the log."""
