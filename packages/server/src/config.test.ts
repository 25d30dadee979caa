import { availableParallelism } from "node:os";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ConfigError, defaultConfig, helpText, maxWorkers, parseConfig, settings } from "./config.js";

describe("parseConfig", () => {
  it("has the documented defaults", () => {
    const { config, help } = parseConfig([], {});
    expect(help).toBe(false);
    expect(config).toEqual(defaultConfig);
    expect(config).toMatchObject({
      host: "127.0.0.1",
      port: 8080,
      dataDir: "./.wap-data",
      bodyLimitBytes: 1048576,
      trustProxyHops: 0,
      rateLimit: { authenticatedPoints: 600, anonymousPoints: 120, windowSeconds: 60 },
    });
  });

  it("reads WAP_* variables, and flags win over them", () => {
    const env = { WAP_PORT: "9000", WAP_HOST: "0.0.0.0", WAP_RATE_LIMIT: "10", WAP_BODY_LIMIT: "2mb" };
    const { config } = parseConfig(["--port", "9100", "--rate-limit-anonymous=5", "--trust-proxy"], env);
    expect(config.port).toBe(9100);
    expect(config.host).toBe("0.0.0.0");
    expect(config.rateLimit).toEqual({ authenticatedPoints: 10, anonymousPoints: 5, windowSeconds: 60 });
    expect(config.bodyLimitBytes).toBe(2 * 1024 * 1024);
    expect(config.trustProxyHops).toBe(1);
    expect(parseConfig(["--trust-proxy", "2"]).config.trustProxyHops).toBe(2);
    expect(parseConfig([], { WAP_TRUST_PROXY: "false" }).config.trustProxyHops).toBe(0);
  });

  it("reads every setting from both its variable and its flag", () => {
    for (const setting of settings) {
      // Ours are WAP_*; the OpenTelemetry settings keep the names its SDKs and operators use.
      expect(setting.env).toMatch(/^(WAP|OTEL)_[A-Z0-9_]+$/);
      expect(setting.flag).toMatch(/^--[a-z0-9-]+$/);
      expect(helpText()).toContain(setting.env);
      expect(helpText()).toContain(setting.flag);
    }
  });

  it("keeps every option's text apart from the option, in one column", () => {
    const help = helpText().split("\n");
    const columns = new Set<number>();
    for (const setting of settings) {
      const line = help.find((l) => l.startsWith(`  ${setting.flag} `));
      expect(line, setting.flag).toBeDefined();
      const left = `  ${setting.flag} ${setting.value}`;
      expect(line!.slice(left.length, left.length + 2), setting.flag).toBe("  ");
      columns.add(line!.length - line!.slice(left.length).trimStart().length);
    }
    expect(columns.size).toBe(1);
  });

  it("reads the edge limits and the outbound network allowance, refusing what is not a network", () => {
    const { config } = parseConfig(["--headers-timeout", "5", "--max-connections-per-client=0"], {
      WAP_BODY_TIMEOUT: "7",
      WAP_OUTBOUND_ALLOW_NETWORKS: "10.0.0.0/8, fd00::/8,192.0.2.7",
    });
    expect(config).toMatchObject({
      headersTimeoutSeconds: 5,
      bodyTimeoutSeconds: 7,
      maxConnectionsPerClient: 0,
      outboundAllowNetworks: ["10.0.0.0/8", "fd00::/8", "192.0.2.7"],
    });
    expect(defaultConfig).toMatchObject({
      headersTimeoutSeconds: 20,
      bodyTimeoutSeconds: 30,
      maxConnectionsPerClient: 128,
      outboundAllowNetworks: [],
    });
    expect(() => parseConfig([], { WAP_OUTBOUND_ALLOW_NETWORKS: "intranet.example" })).toThrow(
      /WAP_OUTBOUND_ALLOW_NETWORKS: "intranet.example" is not a network/,
    );
    expect(() => parseConfig(["--body-timeout", "0"])).toThrow(ConfigError);
  });

  it("parses allowed origins and refuses paths", () => {
    const { config } = parseConfig(["--allowed-origins", "https://a.example, http://b.example:8080"]);
    expect(config.allowedOrigins).toEqual(["https://a.example", "http://b.example:8080"]);
    expect(() => parseConfig(["--allowed-origins", "https://a.example/app"])).toThrow(ConfigError);
    expect(() => parseConfig(["--allowed-origins", "not a url"])).toThrow(/not an origin/);
  });

  it("reads the public URL and the mail relay, and keeps the relay's password out of errors", () => {
    const env = {
      WAP_SMTP_URL: "smtp://mailer:s3cret@mail.example:587",
      WAP_MAIL_FROM: "no-reply@example.com",
    };
    const { config } = parseConfig(["--public-url", "https://wap.example.com/"], env);
    expect(config).toMatchObject({
      publicUrl: "https://wap.example.com",
      smtpUrl: "smtp://mailer:s3cret@mail.example:587",
      mailFrom: "no-reply@example.com",
    });
    expect(parseConfig(["--public-url", "https://example.com/wap/"]).config.publicUrl).toBe(
      "https://example.com/wap",
    );
    expect(() => parseConfig(["--public-url", "wap.example.com"])).toThrow(/absolute URL/);
    expect(() => parseConfig(["--public-url", "https://wap.example.com/?a=b"])).toThrow(/without query/);
    expect(() => parseConfig([], { WAP_SMTP_URL: "smtp://relay.example" })).toThrow(/WAP_MAIL_FROM/);
    expect(() =>
      parseConfig(["--smtp-url", "http://u:s3cret@relay.example", "--mail-from", "a@b.c"]),
    ).toThrow(/^--smtp-url must be an smtp:\/\/ or smtps:\/\/ URL with a host name$/);
    expect(() => parseConfig(["--mail-from", "nobody"])).toThrow(/--mail-from must be an email address/);
  });

  it("explains what is wrong", () => {
    expect(() => parseConfig(["--port", "http"])).toThrow(/--port must be a whole number/);
    expect(() => parseConfig([], { WAP_PORT: "70000" })).toThrow(/WAP_PORT must be between 0 and 65535/);
    expect(() => parseConfig(["--nope"])).toThrow(/unknown argument "--nope"/);
    expect(() => parseConfig(["--log-level", "loud"])).toThrow(/--log-level must be one of/);
    expect(() => parseConfig(["--body-limit", "1tb"])).toThrow(/--body-limit/);
    expect(() => parseConfig(["--port"])).toThrow(/--port needs a value/);
    expect(() => parseConfig(["--tls-cert", "cert.pem"])).toThrow(/both a certificate and a key/);
  });

  it("reads the command first, serve by default", () => {
    expect(parseConfig([]).command).toBe("serve");
    expect(parseConfig(["migrate", "--database-url", "postgres://db/wap"])).toMatchObject({
      command: "migrate",
      config: { databaseUrl: "postgres://db/wap" },
    });
    expect(parseConfig(["master-key"]).command).toBe("master-key");
    expect(() => parseConfig(["mgirate"])).toThrow(/unknown command "mgirate"/);
    expect(() => parseConfig(["--port", "1", "migrate"])).toThrow(/unknown argument "migrate"/);
  });

  it("sizes the PostgreSQL pool", () => {
    expect(parseConfig([]).config.databasePoolSize).toBe(10);
    expect(parseConfig([], { WAP_DATABASE_POOL_SIZE: "25" }).config.databasePoolSize).toBe(25);
    expect(() => parseConfig(["--database-pool-size", "0"])).toThrow(/between 1 and 1000/);
  });

  it("reads the daemon keepalive and the instance lease, within their bounds", () => {
    expect(parseConfig([]).config).toMatchObject({ daemonKeepaliveSeconds: 60, instanceLeaseSeconds: 30 });
    const { config } = parseConfig(["--daemon-keepalive", "20"], {
      WAP_DAEMON_KEEPALIVE_SECONDS: "45",
      WAP_INSTANCE_LEASE_SECONDS: "12",
    });
    expect(config).toMatchObject({ daemonKeepaliveSeconds: 20, instanceLeaseSeconds: 12 });
    expect(() => parseConfig(["--daemon-keepalive", "0"])).toThrow(
      /--daemon-keepalive must be between 1 and 3600/,
    );
    expect(() => parseConfig([], { WAP_INSTANCE_LEASE_SECONDS: "2" })).toThrow(
      /WAP_INSTANCE_LEASE_SECONDS must be between 3 and 3600/,
    );
    expect(helpText()).toMatch(/--daemon-keepalive <seconds>\s+How often an idle daemon control stream/);
  });

  it("reads the CLI login cap and the workspace quotas, each listed in --help with its default", () => {
    const { config } = parseConfig(
      ["--workspace-max-daemons", "3", "--cli-login-max-pending-per-address", "4"],
      {
        WAP_WORKSPACE_MAX_TARGETS: "7",
        WAP_WORKSPACE_MAX_SERVICE_ACCOUNTS: "2",
        WAP_WORKSPACE_MAX_RECORDING_BYTES: "1048576",
        WAP_WORKSPACE_MAX_OPEN_SESSIONS: "5",
      },
    );
    expect(config).toMatchObject({
      workspaceMaxDaemons: 3,
      workspaceMaxTargets: 7,
      workspaceMaxServiceAccounts: 2,
      workspaceMaxRecordingBytes: 1_048_576,
      workspaceMaxOpenSessions: 5,
      cliLoginMaxPendingPerAddress: 4,
    });
    expect(parseConfig([]).config).toMatchObject({
      workspaceMaxDaemons: 100,
      workspaceMaxTargets: 1000,
      workspaceMaxServiceAccounts: 100,
      workspaceMaxRecordingBytes: 10 * 1024 ** 3,
      workspaceMaxOpenSessions: 100,
      cliLoginMaxPendingPerAddress: 10,
    });
    expect(helpText()).toMatch(/--workspace-max-daemons <n>\s+Most daemons/);
    expect(helpText()).toContain("WAP_WORKSPACE_MAX_RECORDING_BYTES");
    expect(() => parseConfig(["--workspace-max-targets", "many"])).toThrow(ConfigError);
  });

  it("reads the worker count: 1 by default, auto as the CPUs, refused out of 1..256", () => {
    expect(parseConfig([]).config.workers).toBe(1);
    expect(parseConfig([], { WAP_WORKERS: "auto" }).config.workers).toBe(
      Math.min(availableParallelism(), maxWorkers),
    );
    fc.assert(
      fc.property(fc.integer({ min: -10, max: 2 * maxWorkers }), (n) => {
        const text = String(n);
        if (n >= 1 && n <= maxWorkers) expect(parseConfig(["--workers", text]).config.workers).toBe(n);
        else expect(() => parseConfig(["--workers", text])).toThrow(ConfigError);
      }),
    );
    expect(() => parseConfig([], { WAP_WORKERS: "0" })).toThrow(/WAP_WORKERS must be between 1 and 256/);
    expect(() => parseConfig(["--workers", "two"])).toThrow(/--workers must be a whole number/);
  });

  it("never takes the next flag as a flag's value, and reads values given with = or apart", () => {
    expect(() => parseConfig(["--host", "--port", "8081"])).toThrow(/--host needs a value: --host/);
    expect(() => parseConfig(["backup", "--to", "--port", "1"])).toThrow(/--to needs a file/);
    expect(parseConfig(["--host=0.0.0.0", "--port", "8081"]).config).toMatchObject({
      host: "0.0.0.0",
      port: 8081,
    });
    expect(parseConfig(["--console", "false", "--port", "1"]).config).toMatchObject({
      console: false,
      port: 1,
    });
    expect(parseConfig(["--console=false"]).config.console).toBe(false);
    expect(parseConfig(["--console", "--port", "2"]).config).toMatchObject({ console: true, port: 2 });
    expect(parseConfig(["--trust-proxy"]).config.trustProxyHops).toBe(1);
    expect(parseConfig(["backup", "--to=/tmp/b.db"]).file).toBe("/tmp/b.db");
    expect(() => parseConfig(["-x"])).toThrow(/unknown argument "-x"/);
    expect(() => parseConfig(["--port", "1", "--", "2"])).toThrow(/unknown argument "--"/);
    expect(parseConfig(["-V"]).version).toBe(true);
  });

  it("recognises --help", () => {
    expect(parseConfig(["--help"]).help).toBe(true);
    expect(parseConfig(["-h"]).help).toBe(true);
  });
});
