package io.rebalancelens.javaagent;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.security.CodeSource;
import java.security.ProtectionDomain;
import java.util.List;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.stream.Collectors;

/**
 * The javaagent's own jar, read as files rather than through a class loader: the helpers' bytes come from here
 * for whichever loader needs them ({@link HelperLoader}), and {@link References} reads what they use from here.
 */
final class AgentJar {
    /** The helpers: the classes that link against kafka-clients, and what they alone use (relocated Jackson). */
    static final List<String> HELPER_PACKAGES = List.of("io.rebalancelens.agent.",
            "io.rebalancelens.javaagent.helper.", "io.rebalancelens.shaded.jackson.");

    private final JarFile jar;
    private final ProtectionDomain domain;

    private AgentJar(JarFile jar, ProtectionDomain domain) {
        this.jar = jar;
        this.domain = domain;
    }

    /** The jar that {@code anchor} was loaded from. */
    static AgentJar of(Class<?> anchor) {
        ProtectionDomain domain = anchor.getProtectionDomain();
        CodeSource source = domain.getCodeSource();
        try {
            return new AgentJar(new JarFile(new java.io.File(source.getLocation().toURI())), domain);
        } catch (IOException | URISyntaxException | NullPointerException e) {
            throw new IllegalStateException("the javaagent's classes do not come from its jar (" + source + ")", e);
        }
    }

    static boolean isHelper(String className) {
        return HELPER_PACKAGES.stream().anyMatch(className::startsWith);
    }

    ProtectionDomain protectionDomain() {
        return domain;
    }

    /** The class file of {@code className}, or null if the jar has none. */
    byte[] classFile(String className) {
        JarEntry entry = jar.getJarEntry(className.replace('.', '/') + ".class");
        if (entry == null) {
            return null;
        }
        try (InputStream in = jar.getInputStream(entry)) {
            return in.readAllBytes();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The names of the jar's classes in {@code packages} (prefixes with a trailing dot). */
    List<String> classNames(List<String> packages) {
        return jar.stream().map(JarEntry::getName).filter(name -> name.endsWith(".class"))
                .map(name -> name.substring(0, name.length() - ".class".length()).replace('/', '.'))
                .filter(name -> packages.stream().anyMatch(name::startsWith))
                .sorted().collect(Collectors.toList());
    }
}
