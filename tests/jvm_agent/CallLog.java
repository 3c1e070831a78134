import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.common.TopicPartition;

/**
 * The tests' Java drivers' own application listeners (tests/support/jvm_drivers.py compiles it with each driver):
 * every listener call in order, with its partitions and wall-clock time, and what each member owns by its
 * listener's account; what the agent reports is checked against it.
 */
public final class CallLog {
    private final List<Map<String, Object>> calls = new ArrayList<>();
    private final Map<String, Set<Integer>> owned = new HashMap<>();

    /** Every call so far (and the drivers' own marks), for the driver's JSON result. */
    public List<Map<String, Object>> calls() {
        return calls;
    }

    /** A driver's own entry among the listener calls (a step's end, an enforceRebalance). */
    public void mark(Map<String, Object> entry) {
        calls.add(entry);
    }

    /** How many partitions the member's listener says it owns (what the application knows of its assignment). */
    public int owned(String role) {
        return owned.getOrDefault(role, Set.of()).size();
    }

    /** The application's own listener for member {@code role}: records each call. */
    public ConsumerRebalanceListener listener(String role) {
        return new ConsumerRebalanceListener() {
            @Override
            public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                record(role, "assigned", partitions);
            }

            @Override
            public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                record(role, "revoked", partitions);
            }

            @Override
            public void onPartitionsLost(Collection<TopicPartition> partitions) {
                record(role, "lost", partitions);
            }
        };
    }

    private void record(String role, String callback, Collection<TopicPartition> partitions) {
        Set<Integer> mine = owned.computeIfAbsent(role, r -> new HashSet<>());
        List<Integer> numbers = new ArrayList<>();
        for (TopicPartition tp : partitions) {
            numbers.add(tp.partition());
            if ("assigned".equals(callback)) {
                mine.add(tp.partition());
            } else {
                mine.remove(tp.partition());
            }
        }
        numbers.sort(Integer::compare);
        calls.add(Map.of("role", role, "callback", callback, "partitions", numbers, "time_ms",
                System.currentTimeMillis()));
    }
}
