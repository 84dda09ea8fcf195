"""Protobuf schemas traceview reads without the frameworks that wrote them (see xplane.proto)."""
