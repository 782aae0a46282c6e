"""The API server's request pipeline, one for every caller: the HTTP front end and in-process
components call the same methods and get the same objects, errors and resourceVersions.

Create, as kube-apiserver orders it: decode → defaulting → mutating admission → the
strategy's preparation (uid, creationTimestamp, generateName, status reset) → validation →
validating admission → store; what a pod's create makes before its quota charge is
remembered per template (`create_memo`), and its template's next pods are made from that; so
is what a recorder's Event create makes (`event_memo`).
Update and patch read the stored object first and write with a resourceVersion precondition,
so of two writers from the same version exactly one wins. Nothing is stored when any step
fails.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
from collections.abc import AsyncIterator, Callable, Hashable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypeVar

from pinnace.api import catalog, status
from pinnace.api.core.event import EVENT
from pinnace.api.decode import NO_REPEATS, Repeats, Undecodable, as_decoded, decode
from pinnace.api.features import FeatureGates
from pinnace.api.field import FieldError, Path, invalid, required
from pinnace.api.kind import Kind
from pinnace.api.meta import is_path_segment_name
from pinnace.api.names import GENERATE_NAME_MAX_BASE, random_suffix
from pinnace.api.objects import Object, Remembered, clone, clone_but, meta, resource_version
from pinnace.api.options import (
    LATEST,
    DeleteOptions,
    ListOptions,
    WriteOptions,
    decode_continue,
    encode_continue,
    parse_resource_version,
)
from pinnace.api.patch import PatchType, track_update
from pinnace.api.registry import KindRegistry
from pinnace.api.status import StatusError
from pinnace.api.versions import ServedVersion
from pinnace.apiserver import deletion, patching
from pinnace.apiserver.admission.service_account import VOLUME_PREFIX
from pinnace.apiserver.admission_chain import PODS, AdmissionChain
from pinnace.apiserver.auth.authorizer import Authorizer, RuleResolver
from pinnace.apiserver.auth.node import NodeAuthorizer
from pinnace.apiserver.auth.policy import node_rules
from pinnace.apiserver.auth.tokens import ServiceAccountTokens, service_account_issuer
from pinnace.apiserver.auth.user import UserInfo
from pinnace.apiserver.binding import AdmittedBindings
from pinnace.apiserver.create_memo import CreateMemo, Made, Template
from pinnace.apiserver.custom_metrics import MetricsProvider
from pinnace.apiserver.event_memo import EventMemo, EventTemplate, MadeEvent
from pinnace.apiserver.filters import Filter, filter_for
from pinnace.apiserver.keys import etcd_key, kind_prefix, list_prefix, object_key
from pinnace.apiserver.logs import LogSource
from pinnace.apiserver.metrics import MetricsSource
from pinnace.apiserver.service_allocation import Finish, ServiceAllocations, ServiceNetwork
from pinnace.apiserver.streams import StreamSource
from pinnace.apiserver.watching import watch_events
from pinnace.clock import Clock, Randomness
from pinnace.store import (
    CompactedError,
    ConflictError,
    FutureRevisionError,
    KeyExistsError,
    KeyNotFoundError,
    Store,
)

T = TypeVar("T")

if TYPE_CHECKING:
    from pinnace.apiserver.agent_summaries import AgentSummaries
    from pinnace.apiserver.deferred import DeferredWrites
    from pinnace.apiserver.kubelets import Kubelets

GENERATE_NAME_ATTEMPTS = 8
"""The first try and the 7 retries of the RetryGenerateName feature (on in v1.32)."""
MAX_CONFLICT_RETRIES = 16
BLOCK_SECONDS = 3.0
"""How long a read at a resourceVersion waits for the store to reach it (the watch cache's
blockTimeout) before it is answered 504 "Too large resource version"."""
_NAME = Path("metadata", "name")
_SYSTEM_FIELDS = ("deletionTimestamp", "deletionGracePeriodSeconds", "selfLink")
"""What a create's metadata may not set (rest.FillObjectMetaSystemFields and BeforeCreate)."""


@dataclass
class Result:
    """What a write returns: the object (or a Status for deletes) and the warnings to send."""

    obj: Object
    warnings: list[str] = field(default_factory=list)
    created: bool = False
    removed: bool = False
    """A DELETE took the object out of the store (rather than marking it)."""


class APIServer:
    def __init__(
        self,
        store: Store,
        clock: Clock,
        rand: Randomness | None = None,
        services: ServiceNetwork | None = None,
        *,
        service_accounts: bool = False,
        features: FeatureGates | None = None,
        tokens: ServiceAccountTokens | None = None,
    ) -> None:
        """`service_accounts`: run the ServiceAccount admission plugin, which refuses pods
        whose account does not exist; for an API server beside the ServiceAccount controller,
        which creates each namespace's `default` (a cluster's: `pinnace.cluster`).
        `features`: its feature gates (kube-apiserver's --feature-gates). `tokens`: the service
        account token issuer; by default one with the default issuer and a key drawn from
        `rand`."""
        self.store = store
        self.clock = clock
        self.features = features or FeatureGates()
        randomness = rand or Randomness()
        self._random = randomness.child("apiserver").random
        self.admission = AdmissionChain(
            self, randomness.child("serviceaccount-admission") if service_accounts else None
        )
        self.services = ServiceAllocations(
            store, randomness.child("service-allocation").random, services or ServiceNetwork()
        )
        """The service storage's cluster IPs and node ports."""
        self.authorizer = Authorizer(RuleResolver(store), NodeAuthorizer(store, node_rules()))
        """Who may do what (RBAC); the HTTP front end asks it, and so do RBAC's writes."""
        self.service_account_tokens = tokens or service_account_issuer(randomness)
        """Signs the tokens serviceaccounts/token hands out, and checks them."""
        self.log_source: LogSource | None = None
        """Set by the node agents: serves pods/log."""
        self.kubelets: Kubelets | None = None
        """Set by the cluster: the kubelets of nodes its own agents do not run."""
        self.agent_summaries: AgentSummaries | None = None
        """Set by the cluster with `kubelets`: how the metrics API reads their summaries."""
        self.metrics_source: MetricsSource | None = None
        """Set by the node agents: serves metrics.k8s.io."""
        self.custom_metrics: MetricsProvider | None = None
        """Set by the cluster's metrics adapter: serves custom.metrics.k8s.io and
        external.metrics.k8s.io."""
        self.stream_source: StreamSource | None = None
        """Set by the node agents: serves pods/exec, pods/attach and pods/portforward."""
        self.kinds = KindRegistry(self._kind_gone)
        """What it serves: the catalog's kinds, and those its CustomResourceDefinitions add
        (`pinnace.apiserver.customresources`)."""
        self.deferred_writes: DeferredWrites | None = None
        """Set by the simulated mode's node agents: the writes they keep back until a read
        would show them (`pinnace.apiserver.deferred`)."""
        self._uids: Remembered[tuple[int, str]] = Remembered(4096)
        """`uid_of`'s memory: keys' uids, each with the revision that wrote what it was read
        from; bounded, as nodes and service accounts come and go in a long run."""
        self._create_memo = CreateMemo()
        """What pod creates made of their templates."""
        self._event_memo = EventMemo()
        """What the creates of recorders' Events made of their templates."""
        self.admitted_bindings = AdmittedBindings()
        """The templates of the in-process scheduler's Bindings that passed admission."""

    def _kind_gone(self, kind: Kind) -> None:
        """A custom kind is no longer served as it was: its watches end, as the old storage's
        do when apiextensions-apiserver tears it down (a client watches again, at the new
        kind, or gets 404 for a deleted one)."""
        self.store.end_watches(kind_prefix(kind))

    # --- reads -------------------------------------------------------------------------------

    async def get(
        self, kind: Kind, namespace: str, name: str, resource_version: str = ""
    ) -> Object:
        """GET. A resourceVersion means "not older than" (the watch cache's
        WaitUntilFreshAndGet): the latest object once the store has reached it."""
        revision = parse_resource_version(resource_version) if resource_version != "0" else 0
        if self.deferred_writes is not None and not revision:
            await self.deferred_writes.before_read(kind, namespace, name)
        await self._fresh(resource_version)
        if revision > self.store.revision:
            raise _too_large(FutureRevisionError(revision, self.store.revision))
        try:
            return await self.store.get(object_key(kind, namespace, name))
        except KeyNotFoundError:
            raise status.not_found(kind.plural, name, kind.group) from None

    async def uid_of(
        self, kind: Kind, namespace: str, name: str, resource_version: str = ""
    ) -> str:
        """The uid of the object `get` would read at `resource_version` "" or "0" (the latest,
        with the same errors), remembered per key until it is written again: an object read
        for its identity alone (what a TokenRequest binds a token to) is not unpacked anew."""
        assert resource_version in ("", "0"), "the uid is read from the latest version"
        return await self.derived(kind, namespace, name, _uid, self._uids, resource_version)

    async def derived(
        self,
        kind: Kind,
        namespace: str,
        name: str,
        derive: Callable[[Object], T],
        remembered: Remembered[tuple[int, T]],
        resource_version: str = "",
    ) -> T:
        """`derive` of the latest object `get` would read (with the same errors), remembered
        in `remembered` per key until the object is written again, so that what is read
        often and written rarely (a Node's kubelet address) is not unpacked anew each time."""
        key = object_key(kind, namespace, name)
        if self.deferred_writes is not None:
            await self.deferred_writes.before_read(kind, namespace, name)
        await self._fresh(resource_version)
        revision = self.store.revision_of(key)
        if revision is None:
            raise status.not_found(kind.plural, name, kind.group)
        known = remembered.get(key)
        if known is not None and known[0] == revision:
            return known[1]
        value = derive(await self.store.get(key))
        remembered.put(key, (revision, value))
        return value

    async def authenticate_service_account(
        self, token: str, audiences: Sequence[str] = ()
    ) -> tuple[UserInfo, tuple[str, ...]] | None:
        """Who a service account token authenticates and for which audiences; None when the
        token is not one; `tokens.TokenError` when it is and fails a check."""
        return await self.service_account_tokens.authenticate(
            token, self._stored_or_none, self.clock.now(), audiences, self._label_secret
        )

    async def _label_secret(self, namespace: str, name: str, label: str, value: str) -> None:
        patch = {"metadata": {"labels": {label: value}}}
        with contextlib.suppress(StatusError):  # gone meanwhile: the token fails anyway
            await self.patch(
                catalog.kind("", "secrets"), namespace, name, PatchType.MERGE, patch, WriteOptions()
            )

    async def _stored_or_none(self, resource: str, namespace: str, name: str) -> Object | None:
        try:
            return await self.get(catalog.kind("", resource), namespace, name)
        except StatusError:
            return None

    async def list(self, kind: Kind, namespace: str, options: ListOptions | None = None) -> Object:
        """A `<Kind>List`; every page of a paginated list is read at the first page's revision.

        A list at resourceVersion "0" is whole whatever its limit: v1.32 serves it from the watch
        cache, which does not paginate (cacher.go `shouldDelegateList`)."""
        options = options or ListOptions()
        selected = filter_for(kind, options)
        prefix = list_prefix(kind, namespace)
        # Continue tokens hold keys relative to the items' common prefix, which for a
        # cluster-scoped kind includes the empty namespace segment (`keys`).
        relative_to = prefix if kind.namespaced else object_key(kind, "", "")
        if not options.continue_token:
            if self.deferred_writes is not None and options.resource_version in ("", "0"):
                await self.deferred_writes.before_read(kind, namespace, "")
            await self._fresh(options.resource_version)
        revision, start_after = self._list_start(options, relative_to)
        if options.continue_token and not revision:
            # A token handed out with a 410 continues at the latest revision, which etcd3's
            # GetList reads from etcd: a consistent read.
            await self._fresh("")
        try:
            page = await self.store.list(
                prefix,
                revision or None,
                limit=_page_limit(options),
                start_after=start_after,
                select=None if selected.everything else selected,
            )
        except CompactedError:
            if options.continue_token:
                raise _continue_expired(options.continue_token) from None
            raise status.resource_expired(LIST_TOO_OLD) from None
        except FutureRevisionError as e:
            raise _too_large(e) from None
        list_meta: dict[str, Any] = {"resourceVersion": str(page.revision)}
        if page.continue_key is not None:
            start = page.continue_key[len(relative_to) :]
            list_meta["continue"] = encode_continue(page.revision, start)
            if page.remaining is not None:
                list_meta["remainingItemCount"] = page.remaining
        return {
            "kind": f"{kind.kind}List",
            "apiVersion": kind.api_version,
            "metadata": list_meta,
            "items": page.items,
        }

    async def _fresh(self, resource_version: str) -> None:
        """Wait for the store before a read, as kube-apiserver's watch cache does
        (waitUntilFreshAndBlock): without a resourceVersion until it has every write committed
        anywhere (a consistent read), with one until it has reached it (another API server on
        the same etcd, or a write of this one, may be making it), for BLOCK_SECONDS at most;
        "0" is any state."""
        if not resource_version:
            await self.store.sync()
            return
        revision = parse_resource_version(resource_version)
        if revision > self.store.revision:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(BLOCK_SECONDS):
                    await self.store.sync(revision)

    def _list_start(self, options: ListOptions, prefix: str) -> tuple[int, str | None]:
        if options.continue_token:
            revision, start = decode_continue(options.continue_token)
            if options.resource_version and options.resource_version != "0":
                raise status.bad_request(
                    "specifying resource version is not allowed when using continue"
                )
            return max(revision, 0), prefix + start
        if options.resource_version in ("", "0"):
            return 0, None
        revision = parse_resource_version(options.resource_version)
        exact = options.resource_version_match == "Exact" or (
            options.limit > 0 and options.resource_version_match != "NotOlderThan"
        )
        if not exact:
            if revision > self.store.revision:
                raise _too_large(FutureRevisionError(revision, self.store.revision))
            return 0, None
        return revision, None

    def watch(
        self, kind: Kind, namespace: str, options: ListOptions | None = None
    ) -> AsyncIterator[Object]:
        """Watch events as kube-apiserver streams them: `{"type": ..., "object": ...}`.

        Without a resourceVersion (or with "0") every existing object comes first as ADDED.
        A compacted start yields one ERROR event with a 410 Status, then ends.
        """
        options = options or ListOptions()
        return watch_events(self, kind, namespace, options, filter_for(kind, options))

    # --- create ------------------------------------------------------------------------------

    async def create(
        self,
        kind: Kind,
        namespace: str,
        body: Any,
        options: WriteOptions | None = None,
        *,
        json_body: bool = False,
        repeats: Repeats = NO_REPEATS,
    ) -> Result:
        """POST. With a fieldManager in `options`, managedFields record that manager as the
        owner of every field the object sets, defaults included, as kube-apiserver does.
        `json_body`: `body` was parsed from JSON text, so holds JSON's own types only;
        `repeats`: what that text repeats."""
        options = options or WriteOptions()
        remembered = kind is PODS or kind is EVENT
        generation = self.admission.generation(namespace) if remembered else None
        template = self._template(kind, namespace, body, options, json_body, repeats, generation)
        if template is not None:
            made = self._create_memo.recall(template)
            if made is not None:
                return await self._create_from(kind, namespace, template, made, options)
        event = self._event_template(kind, namespace, body, options, generation)
        if event is not None:
            made_event = self._event_memo.recall(event)
            if made_event is not None:
                return await self._create_event_from(kind, namespace, event, made_event, options)
        if options.decoded:
            decoded = as_decoded(body, kind)
        else:
            strict = options.field_validation == "Strict"
            decoded = decode(body, kind, strict=strict, json_text=json_body, repeats=repeats)
        obj = decoded.obj
        self.check_namespace(kind, obj, namespace)
        self._default(kind, obj)
        now = self.clock.now_rfc3339()
        if options.field_manager:
            obj = track_update(None, obj, manager=options.field_manager, now=now, kind=kind)
        await self.admission.admit("CREATE", kind, obj, None)
        m = meta(obj)
        if not m.keys().isdisjoint(_SYSTEM_FIELDS):
            for system_field in _SYSTEM_FIELDS:
                m.pop(system_field, None)
        if m.get("resourceVersion"):
            raise status.internal_error(
                "resourceVersion should not be set on objects to be created"
            )
        m["uid"] = _uuid4(self._random.getrandbits(128))
        m["creationTimestamp"] = now
        generate = bool(m.get("generateName")) and not m.get("name")
        if generate:
            m["name"] = self._generated_name(m["generateName"])
        prepared = kind.prepare_for_create(obj) or []
        kind.drop_disabled(obj, None, self.features)
        finish = (
            await self.services.begin_create(obj, options.dry_run)
            if _allocates(kind)
            else _nothing_to_finish
        )
        try:
            warnings = decoded.warnings + prepared + self._checked_create(kind, obj, options)
            if self.admission.pod_security_applies(kind):
                warnings += await self.admission.pod_security(kind, obj, None)
            if self.admission.validates("CREATE", kind):
                await self.admission.validate("CREATE", kind, obj)
            if generation is not None and self.admission.generation(namespace) == generation:
                if template is not None:
                    self._create_memo.remember(template, obj, warnings, now)
                elif event is not None:
                    self._event_memo.remember(event, obj, warnings)
        except BaseException:
            finish(False)
            raise
        return await self._store_created(kind, namespace, obj, generate, warnings, options, finish)

    def _template(
        self,
        kind: Kind,
        namespace: str,
        body: Any,
        options: WriteOptions,
        json_body: bool,
        repeats: Repeats,
        generation: tuple[Hashable, ...] | None,
    ) -> Template | None:
        """A pod create's template (`create_memo`), None for a create the memo does not
        serve; `generation`: admission's."""
        if kind is not PODS or generation is None:
            return None
        if repeats.fields or repeats.yaml or options.validate_create:
            return None
        context = (
            namespace,
            options.decoded,
            options.field_validation == "Strict",
            json_body,
            options.field_manager,
            self.features,
            *generation,
        )
        return self._create_memo.template(body, context)

    def _event_template(
        self,
        kind: Kind,
        namespace: str,
        body: Any,
        options: WriteOptions,
        generation: tuple[Hashable, ...] | None,
    ) -> EventTemplate | None:
        """An Event create's template (`event_memo`): of a body in the caller's own form only,
        which no field manager tracks; `generation`: admission's."""
        if kind is not EVENT or generation is None or not options.decoded:
            return None
        if options.field_manager:
            return None
        context = (namespace, options.validate_create, self.features, *generation)
        return self._event_memo.template(body, context)

    async def _create_event_from(
        self,
        kind: Kind,
        namespace: str,
        template: EventTemplate,
        made: MadeEvent,
        options: WriteOptions,
    ) -> Result:
        """A create of a template's Event as the pipeline made the template's first: its time
        read and its uid drawn in the pipeline's order."""
        now = self.clock.now_rfc3339()
        obj = made.instance(template, _uuid4(self._random.getrandbits(128)), now)
        return await self._store_created(
            kind, namespace, obj, False, [], options, _nothing_to_finish
        )

    async def _create_from(
        self, kind: Kind, namespace: str, template: Template, made: Made, options: WriteOptions
    ) -> Result:
        """A create of a template's pod as the pipeline made the template's first: only the
        pod's own values are made anew, in the order the pipeline draws them."""
        suffix = self.admission.token_volume_suffix(made.account)
        now = self.clock.now_rfc3339()
        uid = _uuid4(self._random.getrandbits(128))
        obj = made.instance(template, uid, now, VOLUME_PREFIX + suffix)
        if made.generate:
            m = meta(obj)
            m["name"] = self._generated_name(m["generateName"])
        warnings = list(made.warnings)
        return await self._store_created(
            kind, namespace, obj, made.generate, warnings, options, _nothing_to_finish
        )

    async def _store_created(
        self,
        kind: Kind,
        namespace: str,
        obj: Object,
        generate: bool,
        warnings: builtins.list[str],
        options: WriteOptions,
        finish: Finish,
    ) -> Result:
        """ResourceQuota's charge, then the store's write (none for a dry run); `finish`
        is told whether the object was stored."""
        dry_run = options.dry_run
        stored_ok = False
        try:
            charged = self.admission.quota_charged(kind, obj, dry_run)
            if charged is None:
                stored = await self._store_new(kind, namespace, obj, generate, dry_run)
            else:
                async with charged:
                    stored = await self._store_new(kind, namespace, obj, generate, dry_run)
            stored_ok = not dry_run
        finally:
            finish(stored_ok)
        if dry_run:
            return Result(stored, warnings, created=True)
        if self.admission.recounts_after("CREATE", kind, namespace):
            await self.admission.after_write("CREATE", kind, namespace)
        return Result(stored, warnings, created=True)

    def _checked_create(self, kind: Kind, obj: Object, options: WriteOptions) -> builtins.list[str]:
        """Validate a new object (a 422 when invalid) and return its kind's warnings."""
        if kind.checks_on_create is None:
            errs, warnings = kind.validate(obj), None
        else:
            errs, warnings = kind.checks_on_create(obj)
        if options.validate_create is not None:
            errs = errs + options.validate_create(obj)
        self._validate(kind, obj, errs)
        return kind.warnings_on_create(obj) if warnings is None else warnings

    async def _begin_update(
        self, kind: Kind, new: Object, old: Object, subresource: str, dry_run: bool
    ) -> Finish:
        if _allocates(kind) and not subresource:
            return await self.services.begin_update(new, old, dry_run)
        return _nothing_to_finish

    async def _store_new(
        self, kind: Kind, namespace: str, obj: Object, generate: bool, dry_run: bool = False
    ) -> Object:
        """Store a new object; a generated name that is taken is generated again. A dry run
        stores nothing but fails as the create would on a name that is taken
        (DryRunnableStorage.Create)."""
        m = meta(obj)
        for _ in range(GENERATE_NAME_ATTEMPTS):
            key = object_key(kind, namespace, m["name"])
            try:
                if not dry_run:
                    return await self.store.create(key, obj)
                if self.store.revision_of(key) is None:
                    return obj
                raise KeyExistsError(key)
            except KeyExistsError:
                if not generate:
                    raise status.already_exists(kind.plural, m["name"], kind.group) from None
                obj = clone(obj)
                m = meta(obj)
                m["name"] = self._generated_name(m["generateName"])
        raise status.already_exists(kind.plural, m["name"], kind.group)

    def _generated_name(self, base: str) -> str:
        return base[:GENERATE_NAME_MAX_BASE] + random_suffix(self._random)

    @staticmethod
    def check_namespace(kind: Kind, obj: Object, namespace: str) -> None:
        """The object takes the request's namespace (none for a cluster-scoped kind); a 400 when
        it names another."""
        m = meta(obj)
        if not kind.namespaced:
            m.pop("namespace", None)
            return
        body_namespace = m.get("namespace")
        if body_namespace and body_namespace != namespace:
            raise status.bad_request(
                "the namespace of the provided object does not match the namespace sent on "
                "the request"
            )
        m["namespace"] = namespace

    @staticmethod
    def _validate(kind: Kind, obj: Object, errs: builtins.list[FieldError]) -> None:
        name = meta(obj).get("name", "")
        if not errs and isinstance(name, str):
            # rest.BeforeCreate's and BeforeUpdate's check of every kind's metadata, after its
            # own validation (which for some, as v1 Events, leaves the name alone).
            if not name:
                errs = [required(_NAME, "name or generateName is required")]
            errs += [invalid(_NAME, name, m) for m in is_path_segment_name(name)]
        if errs:
            raise status.invalid(kind.kind, name if isinstance(name, str) else "", errs, kind.group)

    # --- update ------------------------------------------------------------------------------

    async def update(
        self,
        kind: Kind,
        namespace: str,
        name: str,
        body: Any,
        options: WriteOptions | None = None,
        subresource: str = "",
        *,
        json_body: bool = False,
        repeats: Repeats = NO_REPEATS,
    ) -> Result:
        """PUT: replace the object (or its status, with subresource "status"). With a
        fieldManager in `options`, managedFields record what that manager changed. A uid in
        the body is a precondition: the write is for that object, not one recreated under its
        name (a patch has none; its uid is only validated as immutable). `json_body`: as for
        `create`, and so is `repeats`."""
        options = options or WriteOptions()
        if options.decoded:
            decoded = as_decoded(body, kind)
        else:
            strict = options.field_validation == "Strict"
            decoded = decode(body, kind, strict=strict, json_text=json_body, repeats=repeats)
        new = decoded.obj
        self.check_namespace(kind, new, namespace)
        _check_name(new, name)
        if self._defaulted(kind, subresource):
            self._default(kind, new)
        expected = parse_resource_version(str(meta(new).get("resourceVersion") or ""))

        def build(old: Object) -> Object:
            # A status write puts the stored spec in the body's place, which it only reads
            # until then (`Kind.prepare_for_status_update`): that one is not copied.
            own = clone_but(new, "spec") if subresource == "status" else clone(new)
            if not old or not options.field_manager:
                return own  # a create through PUT records its manager in create
            now = self.clock.now_rfc3339()
            manager = options.field_manager
            return track_update(
                old, own, manager=manager, subresource=subresource, now=now, kind=kind
            )

        return await self._write(
            kind,
            namespace,
            name,
            build,
            expected,
            options,
            subresource,
            decoded.warnings,
            str(meta(new).get("uid") or ""),
        )

    async def modify(
        self,
        kind: Kind,
        namespace: str,
        name: str,
        mutate: Callable[[Object], Object],
        options: WriteOptions | None = None,
        subresource: str = "",
        validation: patching.FieldValidation | None = None,
        *,
        pure: bool = False,
        track: Callable[[Object, Object], Object] | None = None,
    ) -> Result:
        """Read, change, write, retrying on conflicts: `mutate` gets a copy of the stored
        object and returns the new one (a patch, a scale, a component's read-modify-write).
        A resourceVersion the result carries that differs from the stored one is a
        precondition, as in a patch that sets metadata.resourceVersion. With `validation` (a
        patch's), the new object's unknown fields are reported to it, to be refused or warned
        about as its fieldValidation says, and one that does not decode gets the patch
        handler's error. `pure`: `mutate` changes nothing it is
        given (a json, merge or strategic merge patch), so it gets the stored object itself;
        what it returns may share parts with it, which decoding copies unless nothing would
        change them in place before they are stored (no defaulting: the update path after it
        leaves the stored object's parts alone). A patch of this process's own
        (`options.decoded`) is taken as it is once applied, but for one whose parts shared with
        the stored object defaulting would change. `track` (stored, new) -> new records the
        write in managedFields, once the new object is decoded and defaulted."""
        options = options or WriteOptions()
        defaulted = self._defaulted(kind, subresource)

        def build(old: Object) -> Object:
            new = mutate(old if pure else clone(old))
            if not isinstance(new, dict):
                raise status.bad_request("the patch produced something other than an object")
            if options.decoded and not (pure and defaulted):
                decoded = as_decoded(new, kind)
            else:
                try:
                    decoded = decode(new, kind, basis=old, share=pure and not defaulted)
                except Undecodable as e:
                    if validation is None:
                        raise
                    raise validation.undecodable(new, e.cause) from None
            if validation is not None:
                validation.decoded(new, decoded.warnings)
            if defaulted:
                self._default(kind, decoded.obj)
            return decoded.obj if track is None else track(old, decoded.obj)

        return await self._write(kind, namespace, name, build, None, options, subresource, [])

    async def patch(
        self,
        kind: Kind,
        namespace: str,
        name: str,
        patch_type: PatchType,
        patch: Any,
        options: WriteOptions | None = None,
        subresource: str = "",
        conversion: ServedVersion | None = None,
        *,
        repeats: Repeats = NO_REPEATS,
    ) -> Result:
        """PATCH: `patch` (the decoded document) changes the stored object as `patch_type`
        says, then the change takes the update path, built again on what is stored after a
        conflict (GuaranteedUpdate). A server-side apply is by `options.field_manager` and
        creates the object when there is none; other patches record that manager, if any, in
        managedFields. `conversion` is the served version the patch is written against, when
        that is not the stored one. What the patch's text `repeats` and the unknown fields of
        the patched object are warnings or refused, as `options.field_validation` says."""
        options = options or WriteOptions()
        manager = options.field_manager
        apply = patch_type is PatchType.APPLY
        if apply and not manager:
            missing = required("fieldManager", "is required for apply patch")
            raise status.invalid("PatchOptions", "", [missing], "meta.k8s.io")
        now = self.clock.now_rfc3339() if manager else ""
        served = kind if conversion is None else conversion.served
        track = None
        if apply:
            mutate = patching.applier(served, patch, manager, options.force, subresource, now)
        else:
            mutate = patching.patcher(kind, patch_type, patch)
            if manager:
                track = patching.tracker(served, manager, subresource, now, conversion)
        # A bare patch leaves the stored object alone (patching.patcher).
        pure = not apply and not manager and conversion is None
        validation = patching.FieldValidation(options.field_validation, patch_type, patch, repeats)
        if conversion is not None:
            mutate = patching.converted(mutate, conversion, validation)
        mutate = validation.checked(mutate)
        try:
            result = await self.modify(
                kind,
                namespace,
                name,
                mutate,
                options,
                subresource,
                validation,
                pure=pure,
                track=track,
            )
        except StatusError as e:
            if not (apply and e.code == 404 and e.reason == "NotFound" and not subresource):
                raise
            # Apply creates what does not exist yet.
            created = patching.apply_create(served, patch, manager, now)
            validation.applied()
            if conversion is not None:
                created = conversion.to_stored(created)
            _check_name(created, name)
            recorded = replace(options, field_manager="")  # the apply recorded it
            try:
                result = await self.create(kind, namespace, created, recorded)
            except Undecodable as e:
                raise validation.undecodable(created, e.cause) from None
        result.warnings[:0] = validation.warnings
        return result

    async def _write(
        self,
        kind: Kind,
        namespace: str,
        name: str,
        build: Callable[[Object], Object],
        expected: int | None,
        options: WriteOptions,
        subresource: str,
        warnings: builtins.list[str],
        uid: str = "",
    ) -> Result:
        self.check_served(kind, subresource, name)
        key = object_key(kind, namespace, name)
        for _ in range(MAX_CONFLICT_RETRIES):
            try:
                old = await self.store.get(key)
            except KeyNotFoundError:
                if uid and kind.allow_create_on_update:
                    # kube-apiserver checks the precondition against the empty object it
                    # would create.
                    _check_stored_preconditions(kind, namespace, name, {}, uid)
                if kind.allow_create_on_update and not subresource and expected is not None:
                    return await self.create(kind, namespace, build({}), options)
                raise status.not_found(kind.plural, name, kind.group) from None
            _check_stored_preconditions(kind, namespace, name, old, uid)
            new = build(old)
            wanted = expected if expected is not None else resource_version(new)
            if wanted and wanted != resource_version(old):
                raise _conflict(kind, name)
            self._before_update(kind, new, old, subresource)
            if new == old:
                return Result(old, warnings)  # nothing changed: no write, no event
            await self.admission.admit("UPDATE", kind, new, old, subresource)
            finish = await self._begin_update(kind, new, old, subresource, options.dry_run)
            stored_ok = False
            try:
                if new == old:
                    return Result(old, warnings)  # what the storage filled in was all there
                errs = self._update_errors(kind, new, old, subresource)
                if options.validate_update is not None and not subresource:
                    errs = errs + options.validate_update(new, old)
                self._validate(kind, new, errs)
                written = warnings + ([] if subresource else kind.warnings_on_update(new, old))
                if self.admission.pod_security_applies(kind, subresource):
                    written += await self.admission.pod_security(kind, new, old, subresource)
                if self.admission.validates("UPDATE", kind):
                    await self.admission.validate("UPDATE", kind, new, old, subresource)
                if options.dry_run:
                    checked = self.admission.quota_charged(kind, new, True, old, subresource)
                    if checked is not None:
                        async with checked:  # refused as the write would be, charging nothing
                            pass
                    return Result(new, written)
                if deletion.deletion_due(new):
                    return Result(await self._remove(kind, key, name, old), written)
                charged = self.admission.quota_charged(kind, new, False, old, subresource)
                if charged is None:
                    stored = await self.store.update(key, new, resource_version(old))
                else:
                    async with charged:
                        stored = await self.store.update(key, new, resource_version(old))
                stored_ok = True
            except ConflictError:
                # Another write landed since the read: as GuaranteedUpdate, build the write
                # again on what is stored now. A precondition the write carries (a stale
                # resourceVersion, from the body or the patch) fails on that pass.
                continue
            except KeyNotFoundError:
                raise status.not_found(kind.plural, name, kind.group) from None
            finally:
                finish(stored_ok)
            if self.admission.recounts_after("UPDATE", kind, namespace):
                await self.admission.after_write("UPDATE", kind, namespace)
            return Result(stored, written)
        raise _conflict(kind, name)

    def _default(self, kind: Kind, obj: Object) -> None:
        kind.default(obj)
        kind.default_with_features(obj, self.features)

    @staticmethod
    def _defaulted(kind: Kind, subresource: str) -> bool:
        """Whether a write to `subresource` runs the kind's defaults: not one whose strategy
        puts back all they would fill in."""
        return not (subresource == "status" and kind.status_write_discards_defaults)

    def served(self, kind: Kind) -> Kind:
        """`kind` as discovery lists it: without the subresources its feature gates leave
        off."""
        off = {name for name, on in kind.subresource_gates.items() if not on(self.features)}
        if not off:
            return kind
        return replace(kind, subresources=tuple(s for s in kind.subresources if s not in off))

    def check_served(self, kind: Kind, subresource: str, name: str) -> None:
        """A subresource its feature gate leaves off is not there: 404. So is one a custom
        resource's definition does not declare, as its object's NotFound (v1.32's
        apiextensions-apiserver crdHandler); a built-in kind's is no path at all."""
        served = kind.subresource_gates.get(subresource)
        if served is not None and not served(self.features):
            raise status.path_not_found()
        if subresource and subresource not in kind.subresources:
            if kind.custom:
                raise status.not_found(kind.plural, name, kind.group)
            raise status.path_not_found()

    def _before_update(self, kind: Kind, new: Object, old: Object, subresource: str) -> None:
        m, old_m = meta(new), old.get("metadata") or {}
        m["generation"] = old_m.get("generation")
        if m["generation"] is None:
            del m["generation"]
        if subresource == "status":
            kind.prepare_for_status_update(new, old)
        elif subresource:
            kind.subresource_updates[subresource][0](new, old)
        else:
            kind.prepare_for_update(new, old)
        kind.drop_disabled(new, old, self.features)
        for kept in ("uid", "creationTimestamp", "deletionTimestamp"):
            if old_m.get(kept) is not None and (kept != "uid" or not m.get("uid")):
                m[kept] = old_m[kept]
        for same in ("name", "namespace", "uid"):
            stored = old_m.get(same)
            if stored is not None and m.get(same) == stored:
                m[same] = stored  # the stored string, not the request's copy of it
        if "deletionGracePeriodSeconds" in old_m and "deletionGracePeriodSeconds" not in m:
            m["deletionGracePeriodSeconds"] = old_m["deletionGracePeriodSeconds"]
        m["resourceVersion"] = old_m.get("resourceVersion")

    @staticmethod
    def _update_errors(
        kind: Kind, new: Object, old: Object, subresource: str
    ) -> builtins.list[FieldError]:
        if subresource == "status":
            return kind.validate_status_update(new, old)
        if subresource:
            return kind.subresource_updates[subresource][1](new, old)
        return kind.validate_update(new, old)

    # --- delete ------------------------------------------------------------------------------

    async def delete(
        self, kind: Kind, namespace: str, name: str, options: DeleteOptions | None = None
    ) -> Result:
        """DELETE: the object goes now (the result is the object as deleted, or a Status for
        kinds that answer with one), or is marked for a graceful or finalized deletion (the
        result is the marked object)."""
        self.admission.check_named_delete(kind, name)
        result = await self._delete(kind, namespace, name, options)
        result.warnings += deletion.delete_warnings(kind, options or DeleteOptions())
        return result

    async def _delete(
        self, kind: Kind, namespace: str, name: str, options: DeleteOptions | None
    ) -> Result:
        options = options or DeleteOptions()
        deletion.validate_options(options)
        key = object_key(kind, namespace, name)
        for attempt in range(MAX_CONFLICT_RETRIES):
            try:
                old = await self.store.get(key)
            except KeyNotFoundError:
                raise status.not_found(kind.plural, name, kind.group) from None
            if attempt == 0:
                check_delete_preconditions(kind, name, old, options)
            else:
                # A write came between the read and the mark: kube-apiserver's GuaranteedUpdate
                # reads again and checks the preconditions in the store's own words.
                _check_stored_preconditions(
                    kind,
                    namespace,
                    name,
                    old,
                    options.precondition_uid,
                    options.precondition_resource_version,
                )
            await self.admission.check_delete(kind, old)
            decision = deletion.decide(kind, old, options, self.clock.now())
            if options.dry_run:
                would_be = decision.updated or old
                if decision.remove_now:
                    return Result(self._deleted_result(kind, would_be), removed=True)
                return Result(would_be)
            if decision.remove_now:
                if decision.updated is not None:
                    try:
                        old = await self.store.update(key, decision.updated, resource_version(old))
                    except ConflictError:
                        continue
                    except KeyNotFoundError:
                        raise status.not_found(kind.plural, name, kind.group) from None
                removed = await self._remove_marked(kind, namespace, name, old, options)
                return Result(self._deleted_result(kind, removed), removed=True)
            if decision.updated is None:
                return Result(old)
            try:
                return Result(await self.store.update(key, decision.updated, resource_version(old)))
            except ConflictError:
                continue
            except KeyNotFoundError:
                raise status.not_found(kind.plural, name, kind.group) from None
        raise _conflict(kind, name)

    async def _remove_marked(
        self, kind: Kind, namespace: str, name: str, marked: Object, options: DeleteOptions
    ) -> Object:
        """Remove an object just marked for immediate deletion. A write that lands between
        the mark and the removal does not undo the deletion: read again and remove that,
        as kube-apiserver's storage retries its conditional delete, unless the write breaks
        a precondition. A resourceVersion precondition now names the marked object's."""
        key = object_key(kind, namespace, name)
        wanted_rv = ""
        if options.precondition_resource_version:
            wanted_rv = (marked.get("metadata") or {}).get("resourceVersion") or ""
        for _ in range(MAX_CONFLICT_RETRIES):
            with contextlib.suppress(ConflictError):
                return await self._remove(kind, key, name, marked)
            try:
                marked = await self.store.get(key)
            except KeyNotFoundError:
                raise status.not_found(kind.plural, name, kind.group) from None
            _check_stored_preconditions(
                kind, namespace, name, marked, options.precondition_uid, wanted_rv
            )
        raise _conflict(kind, name)

    async def _remove(self, kind: Kind, key: str, name: str, old: Object) -> Object:
        """Remove the object as `old` has it; ConflictError when a write came since."""
        try:
            removed = await self.store.delete(key, resource_version(old))
        except KeyNotFoundError:
            raise status.not_found(kind.plural, name, kind.group) from None
        if kind.kind == "Service" and not kind.group:
            self.services.deleted(removed)
        namespace = (old.get("metadata") or {}).get("namespace", "")
        await self.admission.after_write("DELETE", kind, namespace)
        return removed

    @staticmethod
    def _deleted_result(kind: Kind, removed: Object) -> Object:
        if kind.kind == "Pod" and not kind.group:
            return removed  # the pod registry answers with the object itself
        m = removed.get("metadata") or {}
        details: dict[str, Any] = {"name": m.get("name", ""), "kind": kind.plural}
        if kind.group:
            details["group"] = kind.group
        details["uid"] = m.get("uid", "")
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "details": details,
        }

    async def delete_collection(
        self,
        kind: Kind,
        namespace: str,
        list_options: ListOptions | None = None,
        options: DeleteOptions | None = None,
    ) -> Object:
        """Delete every selected object; the answer is the list of what was deleted."""
        listed = await self.list(kind, namespace, list_options)
        for item in listed["items"]:
            m = item["metadata"]
            try:
                await self._delete(kind, m.get("namespace", ""), m["name"], options)
            except StatusError as e:
                if e.code != 404:
                    raise
        return listed

    # --- helpers for subresources and components ---------------------------------------------

    async def guaranteed_update(
        self,
        kind: Kind,
        namespace: str,
        name: str,
        mutate: Callable[[Object], Object],
        dry_run: bool = False,
        *,
        precondition_uid: str = "",
        precondition_resource_version: str = "",
    ) -> Object:
        """The storage-level read-modify-write subresources use (pods/binding): no strategy,
        no validation; `mutate` gets the stored object, shared and read-only as the store's
        objects are, and returns the new one (which may share what it leaves unchanged), or
        raises a StatusError to refuse. Retries when another write came first. The
        preconditions, when given, are the storage's on the stored object, checked before
        `mutate`."""
        key = object_key(kind, namespace, name)
        for _ in range(MAX_CONFLICT_RETRIES):
            try:
                old = await self.store.get(key)
            except KeyNotFoundError:
                raise status.not_found(kind.plural, name, kind.group) from None
            _check_stored_preconditions(
                kind, namespace, name, old, precondition_uid, precondition_resource_version
            )
            new = mutate(old)
            if dry_run:
                return new
            try:
                return await self.store.update(key, new, resource_version(old))
            except ConflictError:
                continue
            except KeyNotFoundError:
                raise status.not_found(kind.plural, name, kind.group) from None
        raise _conflict(kind, name)

    def kind_for(self, group: str, plural: str) -> Kind:
        kind = self.kinds.by_resource(group, plural)
        if kind is None:
            raise status.not_found(plural, "", group)
        return kind


def _uid(obj: Object) -> str:
    uid: str = obj["metadata"].get("uid", "")
    return uid


def _nothing_to_finish(stored: bool) -> None:
    return None


def _allocates(kind: Kind) -> bool:
    """Whether the kind's storage has a step of its own before validation (kube-apiserver's
    BeginCreate and BeginUpdate): Services get their cluster IPs and node ports."""
    return kind.kind == "Service" and not kind.group


_UUID4_CLEARED = ~((0xF000 << 64) | (0xC000 << 48))
_UUID4_SET = (0x4000 << 64) | (0x8000 << 48)


def _uuid4(bits: int) -> str:
    """`str(uuid.UUID(int=bits, version=4))`, at a third of its cost: every create makes one."""
    h = f"{bits & _UUID4_CLEARED | _UUID4_SET:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _check_name(obj: Object, name: str) -> None:
    body_name = (obj.get("metadata") or {}).get("name")
    if body_name != name:
        raise status.bad_request(
            f"the name of the object ({body_name}) does not match the name on the URL ({name})"
        )


def _conflict(kind: Kind, name: str) -> StatusError:
    return status.conflict(kind.plural, name, status.STALE_RESOURCE_VERSION, kind.group)


def check_delete_preconditions(kind: Kind, name: str, old: Object, options: DeleteOptions) -> None:
    """rest.BeforeDelete's early check of a DELETE's preconditions against the object read,
    before any graceful deletion. Its Conflict names the object's kind, not its resource:
    `Operation cannot be fulfilled on Pod "web"`, `Deployment.apps "web"`."""
    m = old.get("metadata") or {}
    for what, wanted, stored, why in (
        ("UID", options.precondition_uid, m.get("uid") or "", "deleted and then recreated"),
        (
            "ResourceVersion",
            options.precondition_resource_version,
            m.get("resourceVersion") or "",
            "modified",
        ),
    ):
        if wanted and wanted != stored:
            raise status.conflict(
                kind.kind,
                name,
                f"the {what} in the precondition ({wanted}) does not match the {what} in "
                f"record ({stored}). The object might have been {why}",
                kind.group,
            )


def _check_stored_preconditions(
    kind: Kind, namespace: str, name: str, current: Object, uid: str, rv: str = ""
) -> None:
    """storage.Preconditions.Check, which the etcd3 store runs on the object it is about to
    write or remove (the empty object for a PUT that would create): its StorageError
    (invalid object, code 4) reaches the client as a Conflict naming the etcd key."""
    m = current.get("metadata") or {}
    for what, wanted, stored in (
        ("UID", uid, m.get("uid") or ""),
        ("ResourceVersion", rv, m.get("resourceVersion") or ""),
    ):
        if wanted and wanted != stored:
            raise status.conflict(
                kind.plural,
                name,
                "StorageError: invalid object, Code: 4, "
                f"Key: {etcd_key(kind, namespace, name)}, ResourceVersion: 0, "
                f"AdditionalErrorMsg: Precondition failed: {what} in precondition: {wanted}, "
                f"{what} in object meta: {stored}",
                kind.group,
            )


LIST_TOO_OLD = "The resourceVersion for the provided list is too old."
"""kube-apiserver's words when etcd has compacted the revision a list asks for."""


def _too_large(e: FutureRevisionError) -> StatusError:
    """storage.NewTooLargeResourceVersionError, as the watch cache answers a read it could not
    serve within BLOCK_SECONDS: retry after a second."""
    error = status.timeout(f"Too large resource version: {e.requested}, current: {e.current}", 1)
    assert error.details is not None
    error.details["causes"] = [
        {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
    ]
    return error


def _continue_expired(token: str) -> StatusError:
    """The 410 for a token whose revision was compacted, with a token that continues from the
    same place at the latest revision (etcd3's handleCompactedErrorForPaging)."""
    _, start = decode_continue(token)
    error = status.resource_expired(
        "The provided continue parameter is too old to display a consistent list result. You "
        "can start a new list without the continue parameter, or use the continue token in "
        "this response to retrieve the remainder of the results. Continuing with the provided "
        "token results in an inconsistent list - objects that were created, modified, or "
        "deleted between the time the first chunk was returned and now may show up in the list."
    )
    error.list_meta = {"continue": encode_continue(LATEST, start)}
    return error


def _page_limit(options: ListOptions) -> int:
    """The page size of a list: none for one at resourceVersion "0", which v1.32's watch cache
    serves whole (a continue token is served from storage, paginated)."""
    if options.resource_version == "0" and not options.continue_token:
        return 0
    return max(options.limit, 0)


__all__ = ["APIServer", "Filter", "Result"]
