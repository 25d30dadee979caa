"""The platform API through Python grpcio with stubs protoc generated from the published protos.

Run by interop.test.ts: argv[1] is the server's host:port, argv[2] a JSON object with an
account (email, password). Prints one JSON object of observations; the test asserts on them.
"""
import json
import sys
import time

import os

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool

# The stubs of grpc.health.v1 and grpc.reflection.v1 live next to the others, under a "grpc"
# folder that grpcio's own package must also look into.
grpc.__path__.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "grpc"))

from grpc.health.v1 import health_pb2, health_pb2_grpc
from grpc.reflection.v1 import reflection_pb2, reflection_pb2_grpc
from platform.v1 import auth_pb2, auth_pb2_grpc, workspace_pb2, workspace_pb2_grpc
import status_pb2  # google.rpc.Status, for the error details

target = sys.argv[1]
account = json.loads(sys.argv[2])
out = {}
channel = grpc.insecure_channel(target)

# Unary, and the presence of a proto3 optional field.
auth = auth_pb2_grpc.AuthServiceStub(channel)
login = auth.Login(auth_pb2.LoginRequest(email=account["email"], password=account["password"]), timeout=30)
out["login_has_token"] = login.HasField("access_token") and len(login.access_token) > 0
metadata = [("authorization", "Bearer " + login.access_token)]
workspaces = workspace_pb2_grpc.WorkspaceServiceStub(channel)
listed = workspaces.ListWorkspaces(workspace_pb2.ListWorkspacesRequest(), metadata=metadata, timeout=30)
out["workspace_names"] = [w.name for w in listed.workspaces]

# Error details: invalid_argument with a BadRequest field violation in grpc-status-details-bin.
try:
    workspaces.CreateWorkspace(workspace_pb2.CreateWorkspaceRequest(name="ab"), metadata=metadata, timeout=30)
    out["bad_request"] = None
except grpc.RpcError as error:
    details = dict(error.trailing_metadata() or ()).get("grpc-status-details-bin")
    status = status_pb2.Status.FromString(details) if details else None
    out["bad_request"] = {
        "code": error.code().name,
        "detail_types": [d.type_url for d in status.details] if status else [],
        "mentions_field": "name" in error.details(),
    }

# A server stream: headers before any event, then the deadline.
call = workspaces.SubscribeWorkspaceEvents(
    workspace_pb2.SubscribeWorkspaceEventsRequest(workspace_id=listed.workspaces[0].id),
    metadata=metadata,
    timeout=1.5,
)
started = time.monotonic()
call.initial_metadata()
out["initial_metadata_before_deadline"] = time.monotonic() - started < 1.4
try:
    for _ in call:
        pass
    out["stream_end"] = "OK"
except grpc.RpcError as error:
    out["stream_end"] = error.code().name

# Unknown procedure.
try:
    channel.unary_unary("/platform.v1.UserService/NoSuchMethod")(b"", timeout=30)
    out["unknown"] = "OK"
except grpc.RpcError as error:
    out["unknown"] = error.code().name

# Health checking.
health = health_pb2_grpc.HealthStub(channel)
out["health"] = {
    name: health_pb2.HealthCheckResponse.ServingStatus.Name(
        health.Check(health_pb2.HealthCheckRequest(service=name), timeout=30).status
    )
    for name in ["", "platform.v1.UserService", "grpc.health.v1.Health"]
}
try:
    health.Check(health_pb2.HealthCheckRequest(service="no.such.Service"), timeout=30)
    out["health_unknown"] = "OK"
except grpc.RpcError as error:
    out["health_unknown"] = error.code().name
watch = health.Watch(health_pb2.HealthCheckRequest(service=""), timeout=30)
out["health_watch_first"] = health_pb2.HealthCheckResponse.ServingStatus.Name(next(watch).status)
watch.cancel()

# Reflection: list the services, then load one service's file and its dependencies into a fresh
# descriptor pool of this (pre-editions) protobuf runtime.
reflection = reflection_pb2_grpc.ServerReflectionStub(channel)
requests = [
    reflection_pb2.ServerReflectionRequest(list_services=""),
    reflection_pb2.ServerReflectionRequest(file_containing_symbol="platform.v1.CertificateService"),
]
answers = list(reflection.ServerReflectionInfo(iter(requests), timeout=30))
out["reflected_services"] = [s.name for s in answers[0].list_services_response.service]
protos = [descriptor_pb2.FileDescriptorProto.FromString(b) for b in answers[1].file_descriptor_response.file_descriptor_proto]
pool = descriptor_pool.DescriptorPool()
added = set()
by_name = {p.name: p for p in protos}


def add(proto):
    if proto.name in added:
        return
    for dependency in proto.dependency:
        if dependency in by_name:
            add(by_name[dependency])
    pool.Add(proto)
    added.add(proto.name)


for proto in protos:
    add(proto)
service = pool.FindServiceByName("platform.v1.CertificateService")
out["reflected_methods"] = sorted(m.name for m in service.methods)
request = pool.FindMessageTypeByName("platform.v1.CreateCertificateAuthorityRequest")
name = request.fields_by_name["name"]
out["reflected_name_oneof"] = name.containing_oneof.name if name.containing_oneof else None
out["reflected_syntax"] = by_name["platform/v1/certificates.proto"].syntax

print(json.dumps(out))
