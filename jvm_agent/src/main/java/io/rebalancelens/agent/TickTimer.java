package io.rebalancelens.agent;

import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Says a poll that a progress interval has passed, or that a gap probe is armed, so that a poll reads a volatile
 * field instead of the clock: System.nanoTime() took 40-120 ns on the shared 2-core development VM, 1-4% of a poll
 * per record. One daemon thread, shared by every consumer in the JVM, raises the tick an interval after each tick;
 * the tick comes at the first poll after that, which is the clock's rule delayed by the timer's wake-up (well under
 * a millisecond unless the machine is starved). Every share of the interval (the agent spec's
 * progress_gap_probe_share) it arms a probe: the first poll after it reads the clock once, and ticks if it came at
 * least that long after the probe (a long gap without a poll: consumer_agent/progress.py).
 */
final class TickTimer {
    static final int IDLE = 0;
    static final int PROBE = 1;
    static final int TICK = 2;

    private static final ScheduledExecutorService TIMER = Executors.newSingleThreadScheduledExecutor(task -> {
        Thread thread = new Thread(task, "rebalance-lens-progress-timer");
        thread.setDaemon(true);  // never keeps the host's JVM alive
        return thread;
    });

    private final long intervalNanos;
    private final long gapNanos;
    private final AtomicInteger due = new AtomicInteger(IDLE);
    private volatile long probedAt;
    private ScheduledFuture<?> next;  // holds this timer only, never the consumer: an unclosed consumer is freed
    private final ScheduledFuture<?> probes;

    TickTimer(long intervalNanos, double gapShare) {
        this.intervalNanos = intervalNanos;
        this.gapNanos = Math.max(1L, (long) (intervalNanos * gapShare));
        restart();
        probes = TIMER.scheduleAtFixedRate(this::probe, gapNanos, gapNanos, TimeUnit.NANOSECONDS);
    }

    /** {@link #IDLE}, {@link #PROBE} (a gap probe is armed) or {@link #TICK} (an interval passed since the last). */
    int due() {
        return due.get();
    }

    /** Polling thread, at a poll that found a probe armed: whether it came a long gap after it. */
    boolean gapFound(long now) {
        boolean found = now - probedAt >= gapNanos;
        due.compareAndSet(PROBE, IDLE);  // a TICK raised meanwhile stays
        return found;
    }

    private void probe() {
        if (due.get() == IDLE) {  // a probe no poll has met yet keeps its time: the gap has lasted since
            probedAt = System.nanoTime();
            due.compareAndSet(IDLE, PROBE);
        }
    }

    /** A tick happened: the next is due an interval from now. */
    void restart() {
        due.set(IDLE);
        ScheduledFuture<?> previous = next;
        if (previous != null) {
            previous.cancel(false);
        }
        next = TIMER.schedule(() -> due.set(TICK), intervalNanos, TimeUnit.NANOSECONDS);
    }

    void stop() {
        next.cancel(false);
        probes.cancel(false);
    }
}
