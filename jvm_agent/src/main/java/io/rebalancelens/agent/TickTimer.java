package io.rebalancelens.agent;

import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * Says a poll that a progress interval has passed, so that a poll reads a volatile flag instead of the clock:
 * System.nanoTime() took 40-120 ns on the shared 2-core development VM, 1-4% of a poll per record. One daemon
 * thread, shared by every consumer in the JVM, raises the flag an interval after each tick; the tick comes at the
 * first poll after that, which is the clock's rule delayed by the timer's wake-up (well under a millisecond
 * unless the machine is starved).
 */
final class TickTimer {
    private static final ScheduledExecutorService TIMER = Executors.newSingleThreadScheduledExecutor(task -> {
        Thread thread = new Thread(task, "rebalance-lens-progress-timer");
        thread.setDaemon(true);  // never keeps the host's JVM alive
        return thread;
    });

    private final long intervalNanos;
    private volatile boolean due;
    private ScheduledFuture<?> next;  // holds this timer only, never the consumer: an unclosed consumer is freed

    TickTimer(long intervalNanos) {
        this.intervalNanos = intervalNanos;
        restart();
    }

    /** An interval has passed since the last {@link #restart}. */
    boolean due() {
        return due;
    }

    /** A tick happened: the next is due an interval from now. */
    void restart() {
        due = false;
        next = TIMER.schedule(() -> due = true, intervalNanos, TimeUnit.NANOSECONDS);
    }

    void stop() {
        next.cancel(false);
    }
}
