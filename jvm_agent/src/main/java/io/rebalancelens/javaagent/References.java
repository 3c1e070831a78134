package io.rebalancelens.javaagent;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import net.bytebuddy.description.ByteCodeElement;
import net.bytebuddy.description.method.MethodDescription;
import net.bytebuddy.description.type.TypeDefinition;
import net.bytebuddy.description.type.TypeDescription;
import net.bytebuddy.dynamic.ClassFileLocator;
import net.bytebuddy.jar.asm.AnnotationVisitor;
import net.bytebuddy.jar.asm.ClassReader;
import net.bytebuddy.jar.asm.ClassVisitor;
import net.bytebuddy.jar.asm.Handle;
import net.bytebuddy.jar.asm.Label;
import net.bytebuddy.jar.asm.MethodVisitor;
import net.bytebuddy.jar.asm.Opcodes;
import net.bytebuddy.jar.asm.Type;
import net.bytebuddy.pool.TypePool;
import net.bytebuddy.utility.OpenedClassReader;

/**
 * What the agent uses of kafka-clients, and whether a given kafka-clients has it: OpenTelemetry's muzzle, small.
 * The references are read from the helpers' own bytecode (every class, method, field and supertype of
 * {@code org.apache.kafka} that an instruction, a lambda or a catch names), plus those of the advice, so no list
 * is kept by hand. {@link #missing} checks them against the class files a class loader would give, without
 * loading a class: the agent attaches only where all resolve, else it names what is missing in one line and
 * leaves the application as it is. That replaces a version string: a vendor build or a newer release that has
 * what the agent uses is instrumented, an older one that lacks a method is not.
 */
final class References {
    static final String KAFKA = "org/apache/kafka/";
    /** Missing references a one-line message names before "(+N more)". */
    private static final int NAMED_IN_A_LINE = 4;

    enum Kind { CLASS, METHOD, FIELD, SUPERTYPE }

    /** One thing used: a class, a method or constructor, a field, or a type a helper extends or implements. */
    static final class Reference {
        final Kind kind;
        final String owner;
        final String name;
        final String descriptor;
        final String user;

        Reference(Kind kind, String owner, String name, String descriptor, String user) {
            this.kind = kind;
            this.owner = owner;
            this.name = name;
            this.descriptor = descriptor;
            this.user = user;
        }

        @Override
        public boolean equals(Object other) {
            if (!(other instanceof Reference)) {
                return false;
            }
            Reference that = (Reference) other;
            return kind == that.kind && owner.equals(that.owner) && Objects.equals(name, that.name)
                    && Objects.equals(descriptor, that.descriptor) && Objects.equals(user, that.user);
        }

        @Override
        public int hashCode() {
            return Objects.hash(kind, owner, name, descriptor, user);
        }
    }

    private final Set<Reference> references;
    /** Per helper (internal name): the methods it and its helper superclasses implement, as name + descriptor. */
    private final Map<String, Set<String>> implemented;
    private final Map<String, String> superclassOf;

    private References(Set<Reference> references, Map<String, Set<String>> implemented,
                       Map<String, String> superclassOf) {
        this.references = references;
        this.implemented = implemented;
        this.superclassOf = superclassOf;
    }

    /**
     * The references of the helpers in {@code jar} but those of the classes named by {@code excluded} (prefixes:
     * another family's helpers) and of methods marked {@code @KafkaSince} (with the lambdas they make), plus
     * {@code advice}'s. Relocated libraries aside: they name no Kafka type.
     */
    static References of(AgentJar jar, Collection<Reference> advice, Collection<String> excluded) {
        Collector collector = new Collector();
        List<String> scanned = AgentJar.HELPER_PACKAGES.stream().filter(p -> !p.startsWith("io.rebalancelens.shaded."))
                .collect(Collectors.toList());
        for (String name : jar.classNames(scanned)) {
            if (excluded.stream().noneMatch(name::startsWith)) {
                byte[] classFile = jar.classFile(name);
                collector.skipped = NewerApi.skippedMethods(classFile);
                OpenedClassReader.of(classFile).accept(collector, ClassReader.SKIP_DEBUG | ClassReader.SKIP_FRAMES);
            }
        }
        collector.references.addAll(advice);
        return new References(collector.references, collector.implemented, collector.superclassOf);
    }

    /** What the helpers use that {@code kafka} (class files of one kafka-clients and the JDK) lacks, described. */
    List<String> missing(ClassFileLocator kafka) {
        TypePool pool = TypePool.Default.of(kafka);
        Set<String> missing = new TreeSet<>();
        for (Reference ref : references) {
            TypePool.Resolution owner = pool.describe(ref.owner.replace('/', '.'));
            if (!owner.isResolved()) {
                missing.add(simple(ref.owner));
                continue;
            }
            TypeDescription type = owner.resolve();
            try {
                if (ref.kind == Kind.METHOD && !declared(type, ref.kind, ref.name, ref.descriptor)) {
                    missing.add(simple(ref.owner) + "." + ref.name + arguments(ref.descriptor));
                } else if (ref.kind == Kind.FIELD && !declared(type, ref.kind, ref.name, ref.descriptor)) {
                    missing.add(simple(ref.owner) + "." + ref.name);
                } else if (ref.kind == Kind.SUPERTYPE) {
                    for (String method : unimplemented(type, ref.user)) {
                        missing.add(simple(ref.owner) + "." + method + " (not in " + simple(ref.user) + ")");
                    }
                }
            } catch (IllegalStateException unresolvable) {  // a type up the hierarchy is missing
                missing.add(simple(ref.owner) + " (" + unresolvable.getMessage() + ")");
            }
        }
        return new ArrayList<>(missing);
    }

    /** {@link #missing} in one line: the first few, and how many more. */
    static String summary(List<String> missing) {
        String named = String.join(", ", missing.subList(0, Math.min(NAMED_IN_A_LINE, missing.size())));
        int more = missing.size() - NAMED_IN_A_LINE;
        return more <= 0 ? named : named + " (+" + more + " more)";
    }

    private static List<TypeDefinition> hierarchy(TypeDefinition type) {
        List<TypeDefinition> all = new ArrayList<>();
        Deque<TypeDefinition> todo = new ArrayDeque<>(List.of(type));
        Set<String> seen = new HashSet<>();
        while (!todo.isEmpty()) {
            TypeDefinition next = todo.pop();
            if (!seen.add(next.getTypeName())) {
                continue;
            }
            all.add(next);
            if (next.getSuperClass() != null) {
                todo.add(next.getSuperClass().asErasure());
            }
            next.getInterfaces().asErasures().forEach(todo::add);
        }
        return all;
    }

    /** Whether {@code type} or a type above it declares the field or method {@code name} {@code descriptor}. */
    private static boolean declared(TypeDefinition type, Kind kind, String name, String descriptor) {
        for (TypeDefinition t : hierarchy(type)) {
            List<? extends ByteCodeElement> members = kind == Kind.FIELD ? t.getDeclaredFields()
                    : t.getDeclaredMethods();
            for (ByteCodeElement member : members) {
                if (member.getInternalName().equals(name) && member.getDescriptor().equals(descriptor)) {
                    return true;
                }
            }
        }
        return false;
    }

    /** The abstract methods of {@code supertype} that neither its hierarchy nor helper {@code user} implements. */
    private Set<String> unimplemented(TypeDescription supertype, String user) {
        Set<String> concrete = new HashSet<>();
        for (String helper = user; helper != null; helper = superclassOf.get(helper)) {
            concrete.addAll(implemented.getOrDefault(helper, Set.of()));
        }
        Map<String, MethodDescription> abstracts = new HashMap<>();
        for (TypeDefinition t : hierarchy(supertype)) {
            for (MethodDescription m : t.getDeclaredMethods()) {
                String key = m.getInternalName() + m.getDescriptor();
                if (m.isStatic() || m.isPrivate()) {
                    continue;
                }
                if (m.isAbstract()) {
                    abstracts.putIfAbsent(key, m);
                } else {
                    concrete.add(key);
                }
            }
        }
        Set<String> out = new TreeSet<>();
        abstracts.forEach((key, m) -> {
            if (!concrete.contains(key)) {
                out.add(m.getInternalName() + arguments(m.getDescriptor()));
            }
        });
        return out;
    }

    static String simple(String internalName) {
        return internalName.substring(internalName.lastIndexOf('/') + 1).replace('$', '.');
    }

    private static String arguments(String descriptor) {
        return Arrays.stream(Type.getArgumentTypes(descriptor))
                .map(t -> simple(t.getSort() == Type.ARRAY ? t.getElementType().getInternalName() + "[]"
                        : t.getSort() == Type.OBJECT ? t.getInternalName() : t.getClassName()))
                .collect(Collectors.joining(", ", "(", ")"));
    }

    /** Reads the references out of class files, one class after another. */
    private static final class Collector extends ClassVisitor {
        final Set<Reference> references = new LinkedHashSet<>();
        final Map<String, Set<String>> implemented = new HashMap<>();
        final Map<String, String> superclassOf = new HashMap<>();
        private String self;

        /** The methods of the class being read whose references are not required (name + descriptor). */
        Set<String> skipped = Set.of();

        Collector() {
            super(OpenedClassReader.ASM_API);
        }

        @Override
        public void visit(int version, int access, String name, String signature, String superName,
                          String[] interfaces) {
            self = name;
            superclassOf.put(name, superName);
            boolean concrete = (access & (Opcodes.ACC_ABSTRACT | Opcodes.ACC_INTERFACE)) == 0;
            supertype(superName, concrete);
            for (String type : interfaces) {
                supertype(type, concrete);
            }
        }

        /** A concrete helper must implement every abstract method its Kafka supertypes have in the version checked. */
        private void supertype(String type, boolean concrete) {
            if (type != null && type.startsWith(KAFKA)) {
                references.add(new Reference(concrete ? Kind.SUPERTYPE : Kind.CLASS, type, null, null,
                        concrete ? self : null));
            }
        }

        private void type(Type type) {
            Type element = type.getSort() == Type.ARRAY ? type.getElementType() : type;
            if (element.getSort() == Type.OBJECT && element.getInternalName().startsWith(KAFKA)) {
                references.add(new Reference(Kind.CLASS, element.getInternalName(), null, null, null));
            }
        }

        private void member(Kind kind, String owner, String name, String descriptor) {
            if (owner.startsWith(KAFKA)) {
                references.add(new Reference(kind, owner, name, descriptor, null));
            }
        }

        @Override
        public MethodVisitor visitMethod(int access, String name, String descriptor, String signature,
                                         String[] exceptions) {
            if ((access & Opcodes.ACC_ABSTRACT) == 0) {
                implemented.computeIfAbsent(self, k -> new HashSet<>()).add(name + descriptor);
            }
            if (skipped.contains(name + descriptor)) {
                return null;
            }
            return new MethodVisitor(OpenedClassReader.ASM_API) {
                @Override
                public void visitTypeInsn(int opcode, String type) {
                    type(Type.getObjectType(type));
                }

                @Override
                public void visitFieldInsn(int opcode, String owner, String fieldName, String fieldDescriptor) {
                    member(Kind.FIELD, owner, fieldName, fieldDescriptor);
                }

                @Override
                public void visitMethodInsn(int opcode, String owner, String methodName, String methodDescriptor,
                                            boolean isInterface) {
                    member(Kind.METHOD, owner, methodName, methodDescriptor);
                }

                @Override
                public void visitLdcInsn(Object value) {
                    if (value instanceof Type) {
                        type((Type) value);
                    }
                }

                @Override
                public void visitInvokeDynamicInsn(String indyName, String indyDescriptor, Handle bootstrap,
                                                   Object... arguments) {
                    for (Object argument : arguments) {
                        if (argument instanceof Handle) {
                            Handle handle = (Handle) argument;
                            boolean field = handle.getTag() <= Opcodes.H_PUTSTATIC;
                            member(field ? Kind.FIELD : Kind.METHOD, handle.getOwner(), handle.getName(),
                                    handle.getDesc());
                        }
                    }
                }

                @Override
                public void visitTryCatchBlock(Label start, Label end, Label handler, String type) {
                    if (type != null) {
                        type(Type.getObjectType(type));
                    }
                }

                @Override
                public void visitMultiANewArrayInsn(String arrayDescriptor, int dimensions) {
                    type(Type.getType(arrayDescriptor));
                }
            };
        }
    }

    /**
     * The methods of one class that use what only newer kafka-clients have: those marked {@code @KafkaSince}, and the
     * lambda bodies they (or such lambdas) make, which javac puts in synthetic methods of the same class.
     */
    private static final class NewerApi extends ClassVisitor {
        static final String MARK = "Lio/rebalancelens/agent/KafkaSince;";
        private final Set<String> marked = new HashSet<>();
        private final Map<String, Set<String>> lambdas = new HashMap<>();
        private String self;

        private NewerApi() {
            super(OpenedClassReader.ASM_API);
        }

        static Set<String> skippedMethods(byte[] classFile) {
            NewerApi scout = new NewerApi();
            OpenedClassReader.of(classFile).accept(scout, ClassReader.SKIP_DEBUG | ClassReader.SKIP_FRAMES);
            Set<String> skipped = new HashSet<>();
            Deque<String> todo = new ArrayDeque<>(scout.marked);
            while (!todo.isEmpty()) {
                String method = todo.pop();
                if (skipped.add(method)) {
                    todo.addAll(scout.lambdas.getOrDefault(method, Set.of()));
                }
            }
            return skipped;
        }

        @Override
        public void visit(int version, int access, String name, String signature, String superName,
                          String[] interfaces) {
            self = name;
        }

        @Override
        public MethodVisitor visitMethod(int access, String name, String descriptor, String signature,
                                         String[] exceptions) {
            String method = name + descriptor;
            return new MethodVisitor(OpenedClassReader.ASM_API) {
                @Override
                public AnnotationVisitor visitAnnotation(String annotation, boolean visible) {
                    if (MARK.equals(annotation)) {
                        marked.add(method);
                    }
                    return null;
                }

                @Override
                public void visitInvokeDynamicInsn(String indyName, String indyDescriptor, Handle bootstrap,
                                                   Object... arguments) {
                    for (Object argument : arguments) {
                        if (argument instanceof Handle && ((Handle) argument).getOwner().equals(self)) {
                            Handle body = (Handle) argument;
                            lambdas.computeIfAbsent(method, k -> new HashSet<>()).add(body.getName() + body.getDesc());
                        }
                    }
                }
            };
        }
    }
}
