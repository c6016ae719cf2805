/*
 * Iceberg's own REST catalog server (RESTCatalogServer, iceberg-open-api's test fixtures)
 * bound to one address instead of 0.0.0.0: `icefloe dev up --profile rest-s3` starts it as
 *   java -cp .jars/rest-catalog/*:.jars/rest-catalog/classes \
 *     org.apache.iceberg.rest.IcefloeRestServer 127.0.0.1 8181
 * The catalog is configured like RESTCatalogServer's, by CATALOG_* environment variables
 * (CATALOG_X_Y__Z is property x.y-z). It sits in RESTCatalogServer's package because the
 * catalog context and the server's adapter are package-private. Unlike RESTCatalogServer it
 * never logs the catalog properties (they hold the S3 secret) and never reuses a taken port.
 */
package org.apache.iceberg.rest;

import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.CatalogProperties;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.jdbc.JdbcCatalog;
import org.apache.iceberg.relocated.com.google.common.collect.Maps;
import org.eclipse.jetty.compression.gzip.GzipCompression;
import org.eclipse.jetty.compression.server.CompressionHandler;
import org.eclipse.jetty.ee10.servlet.ServletContextHandler;
import org.eclipse.jetty.ee10.servlet.ServletHolder;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;

public class IcefloeRestServer {
  private IcefloeRestServer() {}

  public static void main(String[] args) throws Exception {
    if (args.length != 2) {
      System.err.println("usage: IcefloeRestServer HOST PORT");
      System.exit(2);
    }
    Map<String, String> props = Maps.newHashMap(RCKUtils.environmentCatalogConfig());
    props.putIfAbsent(CatalogProperties.CATALOG_IMPL, JdbcCatalog.class.getName());
    props.putIfAbsent("jdbc.schema-version", "V1");
    for (String key : new String[] {CatalogProperties.URI, CatalogProperties.WAREHOUSE_LOCATION}) {
      if (props.get(key) == null) {
        System.err.println("IcefloeRestServer: set CATALOG_" + key.toUpperCase() + " too");
        System.exit(2);
      }
    }
    String name = props.getOrDefault(RESTCatalogServer.CATALOG_NAME, "rest_backend");
    Catalog catalog = CatalogUtil.buildIcebergCatalog(name, props, new Configuration());
    RESTCatalogAdapter adapter =
        new RESTServerCatalogAdapter(new RESTCatalogServer.CatalogContext(catalog, props));

    ServletContextHandler context = new ServletContextHandler(ServletContextHandler.NO_SESSIONS);
    context.addServlet(new ServletHolder(new RESTCatalogServlet(adapter)), "/*");
    CompressionHandler compression = new CompressionHandler();
    compression.putCompression(new GzipCompression());
    context.insertHandler(compression);

    Server server = new Server();
    ServerConnector connector = new ServerConnector(server);
    connector.setHost(args[0]);
    connector.setPort(Integer.parseInt(args[1]));
    server.addConnector(connector);
    server.setHandler(context);
    server.setStopAtShutdown(true); // SIGTERM stops Jetty and closes the catalog store cleanly
    server.start();
    System.out.println("IcefloeRestServer listening on " + args[0] + ":" + args[1]);
    server.join();
  }
}
