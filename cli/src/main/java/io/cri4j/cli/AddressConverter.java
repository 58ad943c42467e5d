package io.cri4j.cli;

import java.net.InetSocketAddress;
import picocli.CommandLine;

/** {@code HOST:PORT} ({@code [::1]:PORT} for IPv6) as a socket address; port 0 picks a free one. */
final class AddressConverter implements CommandLine.ITypeConverter<InetSocketAddress> {

    @Override
    public InetSocketAddress convert(String value) {
        String v = value.strip();
        int colon = v.lastIndexOf(':');
        if (colon <= 0 || colon == v.length() - 1) {
            throw new CommandLine.TypeConversionException(
                    "'" + value + "' is not HOST:PORT (e.g. 127.0.0.1:10251)");
        }
        String host = v.substring(0, colon);
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        }
        int port;
        try {
            port = Integer.parseInt(v.substring(colon + 1));
        } catch (NumberFormatException e) {
            throw new CommandLine.TypeConversionException("'" + value + "' has no port number");
        }
        if (port < 0 || port > 65535) {
            throw new CommandLine.TypeConversionException(
                    "port of '" + value + "' must be 0..65535");
        }
        InetSocketAddress a = new InetSocketAddress(host, port);
        if (a.isUnresolved()) {
            throw new CommandLine.TypeConversionException("host of '" + value + "' is not known");
        }
        return a;
    }
}
