// Starts Amazon's DynamoDB Local listening on one address only (127.0.0.1 unless
// -Dcosttrack.host says otherwise). DynamoDB Local has no option for the address: its own
// main() listens on every interface. This builds the server exactly as that main() does,
// from the same arguments, then binds its HTTP connector to the address before starting it.
// Reflection only, so it compiles without DynamoDB Local's jars on the class path. It never
// configures DynamoDB Local's telemetry (its main() would), so nothing is sent anywhere.
import java.lang.reflect.Field;

public final class LoopbackDynamoDBLocal {
    private static final String[] RUNNERS = {
        "software.amazon.dynamodb.services.local.main.ServerRunner",
        "com.amazonaws.services.dynamodbv2.local.main.ServerRunner",
    };

    public static void main(String[] args) throws Exception {
        String host = System.getProperty("costtrack.host", "127.0.0.1");
        Class<?> runner = null;
        for (String name : RUNNERS) {
            try {
                runner = Class.forName(name);
                break;
            } catch (ClassNotFoundException missing) {
                // try the next package name
            }
        }
        if (runner == null) {
            throw new IllegalStateException("DynamoDBLocal.jar is not on the class path");
        }
        Object proxy = runner.getMethod("createServerFromCommandLineArgs", String[].class).invoke(null, (Object) args);
        Field field = proxy.getClass().getDeclaredField("server");
        field.setAccessible(true);
        Object jetty = field.get(proxy);
        Object[] connectors = (Object[]) jetty.getClass().getMethod("getConnectors").invoke(jetty);
        if (connectors.length == 0) {
            throw new IllegalStateException("DynamoDB Local has no HTTP connector to bind");
        }
        for (Object connector : connectors) {
            connector.getClass().getMethod("setHost", String.class).invoke(connector, host);
        }
        // safeStart: Jetty's start, nothing else (start() would also try to send telemetry).
        proxy.getClass().getMethod("safeStart").invoke(proxy);
        System.out.println("DynamoDB Local listening on " + host);
        proxy.getClass().getMethod("join").invoke(proxy);
    }
}
