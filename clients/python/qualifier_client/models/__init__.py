"""Contains all the data models used in inputs/outputs"""

from .accept_handoff_body import AcceptHandoffBody
from .accept_handoff_response_200 import AcceptHandoffResponse200
from .create_console_session_response_201 import CreateConsoleSessionResponse201
from .create_endpoint_response_201 import CreateEndpointResponse201
from .create_handoff_body import CreateHandoffBody
from .create_handoff_response_201 import CreateHandoffResponse201
from .create_org_body import CreateOrgBody
from .create_org_response_201 import CreateOrgResponse201
from .create_token_body import CreateTokenBody
from .create_token_response_201 import CreateTokenResponse201
from .delivery import Delivery
from .delivery_detail import DeliveryDetail
from .delivery_detail_attempt_log_item import DeliveryDetailAttemptLogItem
from .delivery_detail_attempt_log_item_error_kind import DeliveryDetailAttemptLogItemErrorKind
from .delivery_status import DeliveryStatus
from .delivery_waiting_for import DeliveryWaitingFor
from .destination import Destination
from .destination_credentials_type_1 import DestinationCredentialsType1
from .destination_type import DestinationType
from .endpoint_health import EndpointHealth
from .endpoint_health_state import EndpointHealthState
from .erased_event import ErasedEvent
from .erased_event_data import ErasedEventData
from .erased_event_data_lead import ErasedEventDataLead
from .error import Error
from .event_handoff_accepted import EventHandoffAccepted
from .event_handoff_accepted_data import EventHandoffAcceptedData
from .event_handoff_created import EventHandoffCreated
from .event_handoff_created_data import EventHandoffCreatedData
from .event_handoff_released import EventHandoffReleased
from .event_handoff_released_data import EventHandoffReleasedData
from .event_lead_created import EventLeadCreated
from .event_lead_created_data import EventLeadCreatedData
from .event_lead_erased import EventLeadErased
from .event_lead_erased_data import EventLeadErasedData
from .event_lead_erased_data_lead import EventLeadErasedDataLead
from .event_lead_qualified import EventLeadQualified
from .event_lead_qualified_data import EventLeadQualifiedData
from .event_lead_stage_changed import EventLeadStageChanged
from .event_lead_stage_changed_data import EventLeadStageChangedData
from .event_lead_updated import EventLeadUpdated
from .event_lead_updated_data import EventLeadUpdatedData
from .event_type import EventType
from .external_ref import ExternalRef
from .external_ref_input import ExternalRefInput
from .get_delivery_response_200 import GetDeliveryResponse200
from .get_endpoint_response_200 import GetEndpointResponse200
from .get_webhook_response_200 import GetWebhookResponse200
from .handoff import Handoff
from .handoff_state import HandoffState
from .healthz_response_200 import HealthzResponse200
from .inbound_contact import InboundContact
from .internal_patch import InternalPatch
from .internal_patch_profile import InternalPatchProfile
from .lead import Lead
from .lead_changes import LeadChanges
from .lead_changes_profile import LeadChangesProfile
from .lead_response import LeadResponse
from .list_deliveries_response_200 import ListDeliveriesResponse200
from .list_endpoints_response_200 import ListEndpointsResponse200
from .list_events_response_200 import ListEventsResponse200
from .list_leads_response_200 import ListLeadsResponse200
from .new_lead import NewLead
from .ordering import Ordering
from .org import Org
from .probe_endpoint_response_202 import ProbeEndpointResponse202
from .profile import Profile
from .public_patch import PublicPatch
from .put_endpoint_response_200 import PutEndpointResponse200
from .put_webhook_response_200 import PutWebhookResponse200
from .readyz_response_200 import ReadyzResponse200
from .receiver_auth import ReceiverAuth
from .receiver_auth_client_auth import ReceiverAuthClientAuth
from .receiver_auth_type import ReceiverAuthType
from .receiver_header import ReceiverHeader
from .release_handoff_response_200 import ReleaseHandoffResponse200
from .replay_deliveries_body import ReplayDeliveriesBody
from .replay_deliveries_body_status_item import ReplayDeliveriesBodyStatusItem
from .replay_deliveries_response_202 import ReplayDeliveriesResponse202
from .replay_deliveries_response_202_not_replayed import ReplayDeliveriesResponse202NotReplayed
from .replay_delivery_response_202 import ReplayDeliveryResponse202
from .rotate_endpoint_secret_body import RotateEndpointSecretBody
from .rotate_endpoint_secret_response_200 import RotateEndpointSecretResponse200
from .rotate_secret_body import RotateSecretBody
from .rotate_secret_response_200 import RotateSecretResponse200
from .send_test_event_body import SendTestEventBody
from .send_test_event_response_202 import SendTestEventResponse202
from .stage import Stage
from .test_endpoint_filter_body import TestEndpointFilterBody
from .test_endpoint_filter_body_event import TestEndpointFilterBodyEvent
from .test_endpoint_filter_response_200 import TestEndpointFilterResponse200
from .token import Token
from .webhook import Webhook
from .webhook_client_certificate_type_1 import WebhookClientCertificateType1
from .webhook_filter_type_0 import WebhookFilterType0
from .webhook_input import WebhookInput
from .webhook_input_filter_type_0 import WebhookInputFilterType0

__all__ = (
    "AcceptHandoffBody",
    "AcceptHandoffResponse200",
    "CreateConsoleSessionResponse201",
    "CreateEndpointResponse201",
    "CreateHandoffBody",
    "CreateHandoffResponse201",
    "CreateOrgBody",
    "CreateOrgResponse201",
    "CreateTokenBody",
    "CreateTokenResponse201",
    "Delivery",
    "DeliveryDetail",
    "DeliveryDetailAttemptLogItem",
    "DeliveryDetailAttemptLogItemErrorKind",
    "DeliveryStatus",
    "DeliveryWaitingFor",
    "Destination",
    "DestinationCredentialsType1",
    "DestinationType",
    "EndpointHealth",
    "EndpointHealthState",
    "ErasedEvent",
    "ErasedEventData",
    "ErasedEventDataLead",
    "Error",
    "EventHandoffAccepted",
    "EventHandoffAcceptedData",
    "EventHandoffCreated",
    "EventHandoffCreatedData",
    "EventHandoffReleased",
    "EventHandoffReleasedData",
    "EventLeadCreated",
    "EventLeadCreatedData",
    "EventLeadErased",
    "EventLeadErasedData",
    "EventLeadErasedDataLead",
    "EventLeadQualified",
    "EventLeadQualifiedData",
    "EventLeadStageChanged",
    "EventLeadStageChangedData",
    "EventLeadUpdated",
    "EventLeadUpdatedData",
    "EventType",
    "ExternalRef",
    "ExternalRefInput",
    "GetDeliveryResponse200",
    "GetEndpointResponse200",
    "GetWebhookResponse200",
    "Handoff",
    "HandoffState",
    "HealthzResponse200",
    "InboundContact",
    "InternalPatch",
    "InternalPatchProfile",
    "Lead",
    "LeadChanges",
    "LeadChangesProfile",
    "LeadResponse",
    "ListDeliveriesResponse200",
    "ListEndpointsResponse200",
    "ListEventsResponse200",
    "ListLeadsResponse200",
    "NewLead",
    "Ordering",
    "Org",
    "ProbeEndpointResponse202",
    "Profile",
    "PublicPatch",
    "PutEndpointResponse200",
    "PutWebhookResponse200",
    "ReadyzResponse200",
    "ReceiverAuth",
    "ReceiverAuthClientAuth",
    "ReceiverAuthType",
    "ReceiverHeader",
    "ReleaseHandoffResponse200",
    "ReplayDeliveriesBody",
    "ReplayDeliveriesBodyStatusItem",
    "ReplayDeliveriesResponse202",
    "ReplayDeliveriesResponse202NotReplayed",
    "ReplayDeliveryResponse202",
    "RotateEndpointSecretBody",
    "RotateEndpointSecretResponse200",
    "RotateSecretBody",
    "RotateSecretResponse200",
    "SendTestEventBody",
    "SendTestEventResponse202",
    "Stage",
    "TestEndpointFilterBody",
    "TestEndpointFilterBodyEvent",
    "TestEndpointFilterResponse200",
    "Token",
    "Webhook",
    "WebhookClientCertificateType1",
    "WebhookFilterType0",
    "WebhookInput",
    "WebhookInputFilterType0",
)
