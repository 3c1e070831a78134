package io.rebalancelens.javaagent;

/**
 * Where the agent's helpers live when the application's KafkaConsumer comes from a class loader that cannot see the
 * agent's copy of them link to it (a Spring Boot or Quarkus nested jar, an application server's per-application
 * loader): a child of that loader that defines the helpers itself, from the agent's jar, and asks its parent for
 * everything else. The helpers then link against the application's own kafka-clients, and nothing of the agent
 * is visible to the application. OpenTelemetry's indy instrumentation does the same
 * (InstrumentationModuleClassLoader: injected helpers first, then the instrumented class's loader); the older
 * way, injecting helper classes into the application's loader itself (its and Datadog's HelperInjector), would
 * add the agent's relocated Jackson to the application's loader and needs a private defineClass.
 */
final class HelperLoader extends ClassLoader {
    static {
        registerAsParallelCapable();
    }

    private final AgentJar jar;

    HelperLoader(ClassLoader application, AgentJar jar) {
        super("rebalance-lens-helpers", application);
        this.jar = jar;
    }

    @Override
    protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
        if (!AgentJar.isHelper(name)) {
            return super.loadClass(name, resolve);
        }
        synchronized (getClassLoadingLock(name)) {
            Class<?> loaded = findLoadedClass(name);
            if (loaded == null) {
                byte[] bytes = jar.classFile(name);
                if (bytes == null) {
                    throw new ClassNotFoundException(name);
                }
                loaded = defineClass(name, bytes, 0, bytes.length, jar.protectionDomain());
            }
            if (resolve) {
                resolveClass(loaded);
            }
            return loaded;
        }
    }
}
