package io.rebalancelens.testapps.kit;

/**
 * One record handed to the application: where it came from and its value, the feeder's record id
 * (lens_scenarios/feeder.py writes each id as ASCII digits).
 */
public final class Delivered {
    final String topic;
    final int partition;
    final long offset;
    final long recordId;
    final long timestampMs;

    public Delivered(String topic, int partition, long offset, String value, long timestampMs) {
        this.topic = topic;
        this.partition = partition;
        this.offset = offset;
        this.recordId = Long.parseLong(value);
        this.timestampMs = timestampMs;
    }
}
