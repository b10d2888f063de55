"""Contains all the data models used in inputs/outputs"""

from .allowance_or_charge import AllowanceOrCharge
from .allowance_or_charge_amount import AllowanceOrChargeAmount
from .allowance_or_charge_base_amount import AllowanceOrChargeBaseAmount
from .allowance_or_charge_percentage import AllowanceOrChargePercentage
from .allowance_or_charge_reason import AllowanceOrChargeReason
from .allowance_or_charge_reason_code import AllowanceOrChargeReasonCode
from .allowance_or_charge_tax_category import AllowanceOrChargeTaxCategory
from .allowance_or_charge_tax_rate import AllowanceOrChargeTaxRate
from .batch_accepted import BatchAccepted
from .batch_accepted_items_item import BatchAcceptedItemsItem
from .batch_accepted_items_item_document_type_0 import (
    BatchAcceptedItemsItemDocumentType0,
)
from .batch_accepted_items_item_job_type_0 import BatchAcceptedItemsItemJobType0
from .batch_accepted_items_item_job_type_0_state import (
    BatchAcceptedItemsItemJobType0State,
)
from .batch_accepted_options import BatchAcceptedOptions
from .batch_accepted_schema import BatchAcceptedSchema
from .batch_accepted_states import BatchAcceptedStates
from .batch_create_request import BatchCreateRequest
from .batch_detail import BatchDetail
from .batch_detail_items_item import BatchDetailItemsItem
from .batch_detail_items_item_document_type_0 import BatchDetailItemsItemDocumentType0
from .batch_detail_items_item_job_type_0 import BatchDetailItemsItemJobType0
from .batch_detail_items_item_job_type_0_state import BatchDetailItemsItemJobType0State
from .batch_detail_options import BatchDetailOptions
from .batch_detail_schema import BatchDetailSchema
from .batch_detail_states import BatchDetailStates
from .document import Document
from .document_upload_request import DocumentUploadRequest
from .endpoint_create_request import EndpointCreateRequest
from .evidence import Evidence
from .field_trust import FieldTrust
from .field_trust_sources_item import FieldTrustSourcesItem
from .field_trust_status import FieldTrustStatus
from .invoice_v1 import InvoiceV1
from .invoice_v1_currency import InvoiceV1Currency
from .invoice_v1_document_type import InvoiceV1DocumentType
from .invoice_v1_document_type_value_type_1 import InvoiceV1DocumentTypeValueType1
from .invoice_v1_document_type_value_type_2_type_1 import (
    InvoiceV1DocumentTypeValueType2Type1,
)
from .invoice_v1_document_type_value_type_3_type_1 import (
    InvoiceV1DocumentTypeValueType3Type1,
)
from .invoice_v1_due_date import InvoiceV1DueDate
from .invoice_v1_invoice_number import InvoiceV1InvoiceNumber
from .invoice_v1_issue_date import InvoiceV1IssueDate
from .invoice_v1_lines_item import InvoiceV1LinesItem
from .invoice_v1_lines_item_description import InvoiceV1LinesItemDescription
from .invoice_v1_lines_item_net_amount import InvoiceV1LinesItemNetAmount
from .invoice_v1_lines_item_quantity import InvoiceV1LinesItemQuantity
from .invoice_v1_lines_item_tax_amount import InvoiceV1LinesItemTaxAmount
from .invoice_v1_lines_item_tax_rate import InvoiceV1LinesItemTaxRate
from .invoice_v1_lines_item_unit_price import InvoiceV1LinesItemUnitPrice
from .invoice_v1_schema import InvoiceV1Schema
from .invoice_v1_supplier import InvoiceV1Supplier
from .invoice_v1_supplier_iban import InvoiceV1SupplierIban
from .invoice_v1_supplier_name import InvoiceV1SupplierName
from .invoice_v1_supplier_vat_id import InvoiceV1SupplierVatId
from .invoice_v1_totals import InvoiceV1Totals
from .invoice_v1_totals_amount_due import InvoiceV1TotalsAmountDue
from .invoice_v1_totals_gross import InvoiceV1TotalsGross
from .invoice_v1_totals_net import InvoiceV1TotalsNet
from .invoice_v1_totals_prepaid import InvoiceV1TotalsPrepaid
from .invoice_v1_totals_tax import InvoiceV1TotalsTax
from .invoice_v2 import InvoiceV2
from .invoice_v2_buyer import InvoiceV2Buyer
from .invoice_v2_buyer_name import InvoiceV2BuyerName
from .invoice_v2_buyer_reference import InvoiceV2BuyerReference
from .invoice_v2_buyer_vat_id import InvoiceV2BuyerVatId
from .invoice_v2_currency import InvoiceV2Currency
from .invoice_v2_document_type import InvoiceV2DocumentType
from .invoice_v2_document_type_value_type_1 import InvoiceV2DocumentTypeValueType1
from .invoice_v2_document_type_value_type_2_type_1 import (
    InvoiceV2DocumentTypeValueType2Type1,
)
from .invoice_v2_document_type_value_type_3_type_1 import (
    InvoiceV2DocumentTypeValueType3Type1,
)
from .invoice_v2_due_date import InvoiceV2DueDate
from .invoice_v2_invoice_number import InvoiceV2InvoiceNumber
from .invoice_v2_issue_date import InvoiceV2IssueDate
from .invoice_v2_lines_item import InvoiceV2LinesItem
from .invoice_v2_lines_item_description import InvoiceV2LinesItemDescription
from .invoice_v2_lines_item_net_amount import InvoiceV2LinesItemNetAmount
from .invoice_v2_lines_item_price_base_quantity import (
    InvoiceV2LinesItemPriceBaseQuantity,
)
from .invoice_v2_lines_item_quantity import InvoiceV2LinesItemQuantity
from .invoice_v2_lines_item_tax_amount import InvoiceV2LinesItemTaxAmount
from .invoice_v2_lines_item_tax_category import InvoiceV2LinesItemTaxCategory
from .invoice_v2_lines_item_tax_rate import InvoiceV2LinesItemTaxRate
from .invoice_v2_lines_item_unit_price import InvoiceV2LinesItemUnitPrice
from .invoice_v2_order_reference import InvoiceV2OrderReference
from .invoice_v2_payment_terms import InvoiceV2PaymentTerms
from .invoice_v2_schema import InvoiceV2Schema
from .invoice_v2_supplier import InvoiceV2Supplier
from .invoice_v2_supplier_iban import InvoiceV2SupplierIban
from .invoice_v2_supplier_name import InvoiceV2SupplierName
from .invoice_v2_supplier_vat_id import InvoiceV2SupplierVatId
from .invoice_v2_tax_breakdown_item import InvoiceV2TaxBreakdownItem
from .invoice_v2_tax_breakdown_item_category import InvoiceV2TaxBreakdownItemCategory
from .invoice_v2_tax_breakdown_item_exemption_reason import (
    InvoiceV2TaxBreakdownItemExemptionReason,
)
from .invoice_v2_tax_breakdown_item_exemption_reason_code import (
    InvoiceV2TaxBreakdownItemExemptionReasonCode,
)
from .invoice_v2_tax_breakdown_item_rate import InvoiceV2TaxBreakdownItemRate
from .invoice_v2_tax_breakdown_item_tax_amount import InvoiceV2TaxBreakdownItemTaxAmount
from .invoice_v2_tax_breakdown_item_taxable_amount import (
    InvoiceV2TaxBreakdownItemTaxableAmount,
)
from .invoice_v2_totals import InvoiceV2Totals
from .invoice_v2_totals_allowance_total import InvoiceV2TotalsAllowanceTotal
from .invoice_v2_totals_amount_due import InvoiceV2TotalsAmountDue
from .invoice_v2_totals_charge_total import InvoiceV2TotalsChargeTotal
from .invoice_v2_totals_gross import InvoiceV2TotalsGross
from .invoice_v2_totals_line_total import InvoiceV2TotalsLineTotal
from .invoice_v2_totals_net import InvoiceV2TotalsNet
from .invoice_v2_totals_prepaid import InvoiceV2TotalsPrepaid
from .invoice_v2_totals_rounding import InvoiceV2TotalsRounding
from .invoice_v2_totals_tax import InvoiceV2TotalsTax
from .job_action_request import JobActionRequest
from .job_create_request import JobCreateRequest
from .job_detail import JobDetail
from .job_detail_schema import JobDetailSchema
from .job_filter_request import JobFilterRequest
from .job_filter_states_enum import JobFilterStatesEnum
from .job_options_request import JobOptionsRequest
from .job_options_request_model_policy import JobOptionsRequestModelPolicy
from .job_result import JobResult
from .priority_enum import PriorityEnum
from .problem import Problem
from .problem_errors import ProblemErrors
from .problem_errors_additional_property_type_1 import (
    ProblemErrorsAdditionalPropertyType1,
)
from .redeliver_filter_request import RedeliverFilterRequest
from .redeliver_filter_states_enum import RedeliverFilterStatesEnum
from .redeliver_request import RedeliverRequest
from .schema_enum import SchemaEnum
from .v1_documents_create_response_400 import V1DocumentsCreateResponse400
from .v1_documents_create_response_400_status import V1DocumentsCreateResponse400Status
from .v1_documents_create_response_400_type import V1DocumentsCreateResponse400Type
from .v1_documents_create_response_401 import V1DocumentsCreateResponse401
from .v1_documents_create_response_401_status import V1DocumentsCreateResponse401Status
from .v1_documents_create_response_401_type import V1DocumentsCreateResponse401Type
from .v1_documents_create_response_403 import V1DocumentsCreateResponse403
from .v1_documents_create_response_403_status import V1DocumentsCreateResponse403Status
from .v1_documents_create_response_403_type import V1DocumentsCreateResponse403Type
from .v1_documents_create_response_406 import V1DocumentsCreateResponse406
from .v1_documents_create_response_406_status import V1DocumentsCreateResponse406Status
from .v1_documents_create_response_406_type import V1DocumentsCreateResponse406Type
from .v1_documents_create_response_413 import V1DocumentsCreateResponse413
from .v1_documents_create_response_413_status import V1DocumentsCreateResponse413Status
from .v1_documents_create_response_413_type import V1DocumentsCreateResponse413Type
from .v1_documents_create_response_415 import V1DocumentsCreateResponse415
from .v1_documents_create_response_415_status import V1DocumentsCreateResponse415Status
from .v1_documents_create_response_415_type import V1DocumentsCreateResponse415Type
from .v1_documents_create_response_422 import V1DocumentsCreateResponse422
from .v1_documents_create_response_422_status import V1DocumentsCreateResponse422Status
from .v1_documents_create_response_422_type import V1DocumentsCreateResponse422Type
from .v1_documents_pages_png_retrieve_response_400 import (
    V1DocumentsPagesPngRetrieveResponse400,
)
from .v1_documents_pages_png_retrieve_response_400_status import (
    V1DocumentsPagesPngRetrieveResponse400Status,
)
from .v1_documents_pages_png_retrieve_response_400_type import (
    V1DocumentsPagesPngRetrieveResponse400Type,
)
from .v1_documents_pages_png_retrieve_response_401 import (
    V1DocumentsPagesPngRetrieveResponse401,
)
from .v1_documents_pages_png_retrieve_response_401_status import (
    V1DocumentsPagesPngRetrieveResponse401Status,
)
from .v1_documents_pages_png_retrieve_response_401_type import (
    V1DocumentsPagesPngRetrieveResponse401Type,
)
from .v1_documents_pages_png_retrieve_response_403 import (
    V1DocumentsPagesPngRetrieveResponse403,
)
from .v1_documents_pages_png_retrieve_response_403_status import (
    V1DocumentsPagesPngRetrieveResponse403Status,
)
from .v1_documents_pages_png_retrieve_response_403_type import (
    V1DocumentsPagesPngRetrieveResponse403Type,
)
from .v1_documents_pages_png_retrieve_response_404 import (
    V1DocumentsPagesPngRetrieveResponse404,
)
from .v1_documents_pages_png_retrieve_response_404_status import (
    V1DocumentsPagesPngRetrieveResponse404Status,
)
from .v1_documents_pages_png_retrieve_response_404_type import (
    V1DocumentsPagesPngRetrieveResponse404Type,
)
from .v1_documents_pages_png_retrieve_response_406 import (
    V1DocumentsPagesPngRetrieveResponse406,
)
from .v1_documents_pages_png_retrieve_response_406_status import (
    V1DocumentsPagesPngRetrieveResponse406Status,
)
from .v1_documents_pages_png_retrieve_response_406_type import (
    V1DocumentsPagesPngRetrieveResponse406Type,
)
from .v1_documents_retrieve_response_200 import V1DocumentsRetrieveResponse200
from .v1_documents_retrieve_response_401 import V1DocumentsRetrieveResponse401
from .v1_documents_retrieve_response_401_status import (
    V1DocumentsRetrieveResponse401Status,
)
from .v1_documents_retrieve_response_401_type import V1DocumentsRetrieveResponse401Type
from .v1_documents_retrieve_response_403 import V1DocumentsRetrieveResponse403
from .v1_documents_retrieve_response_403_status import (
    V1DocumentsRetrieveResponse403Status,
)
from .v1_documents_retrieve_response_403_type import V1DocumentsRetrieveResponse403Type
from .v1_documents_retrieve_response_404 import V1DocumentsRetrieveResponse404
from .v1_documents_retrieve_response_404_status import (
    V1DocumentsRetrieveResponse404Status,
)
from .v1_documents_retrieve_response_404_type import V1DocumentsRetrieveResponse404Type
from .v1_documents_retrieve_response_406 import V1DocumentsRetrieveResponse406
from .v1_documents_retrieve_response_406_status import (
    V1DocumentsRetrieveResponse406Status,
)
from .v1_documents_retrieve_response_406_type import V1DocumentsRetrieveResponse406Type
from .v1_extraction_batches_create_response_400 import (
    V1ExtractionBatchesCreateResponse400,
)
from .v1_extraction_batches_create_response_400_status import (
    V1ExtractionBatchesCreateResponse400Status,
)
from .v1_extraction_batches_create_response_400_type import (
    V1ExtractionBatchesCreateResponse400Type,
)
from .v1_extraction_batches_create_response_401 import (
    V1ExtractionBatchesCreateResponse401,
)
from .v1_extraction_batches_create_response_401_status import (
    V1ExtractionBatchesCreateResponse401Status,
)
from .v1_extraction_batches_create_response_401_type import (
    V1ExtractionBatchesCreateResponse401Type,
)
from .v1_extraction_batches_create_response_403 import (
    V1ExtractionBatchesCreateResponse403,
)
from .v1_extraction_batches_create_response_403_status import (
    V1ExtractionBatchesCreateResponse403Status,
)
from .v1_extraction_batches_create_response_403_type import (
    V1ExtractionBatchesCreateResponse403Type,
)
from .v1_extraction_batches_create_response_406 import (
    V1ExtractionBatchesCreateResponse406,
)
from .v1_extraction_batches_create_response_406_status import (
    V1ExtractionBatchesCreateResponse406Status,
)
from .v1_extraction_batches_create_response_406_type import (
    V1ExtractionBatchesCreateResponse406Type,
)
from .v1_extraction_batches_create_response_409 import (
    V1ExtractionBatchesCreateResponse409,
)
from .v1_extraction_batches_create_response_409_status import (
    V1ExtractionBatchesCreateResponse409Status,
)
from .v1_extraction_batches_create_response_409_type import (
    V1ExtractionBatchesCreateResponse409Type,
)
from .v1_extraction_batches_create_response_413 import (
    V1ExtractionBatchesCreateResponse413,
)
from .v1_extraction_batches_create_response_413_status import (
    V1ExtractionBatchesCreateResponse413Status,
)
from .v1_extraction_batches_create_response_413_type import (
    V1ExtractionBatchesCreateResponse413Type,
)
from .v1_extraction_batches_create_response_415 import (
    V1ExtractionBatchesCreateResponse415,
)
from .v1_extraction_batches_create_response_415_status import (
    V1ExtractionBatchesCreateResponse415Status,
)
from .v1_extraction_batches_create_response_415_type import (
    V1ExtractionBatchesCreateResponse415Type,
)
from .v1_extraction_batches_create_response_422 import (
    V1ExtractionBatchesCreateResponse422,
)
from .v1_extraction_batches_create_response_422_status import (
    V1ExtractionBatchesCreateResponse422Status,
)
from .v1_extraction_batches_create_response_422_type import (
    V1ExtractionBatchesCreateResponse422Type,
)
from .v1_extraction_batches_retrieve_response_400 import (
    V1ExtractionBatchesRetrieveResponse400,
)
from .v1_extraction_batches_retrieve_response_400_status import (
    V1ExtractionBatchesRetrieveResponse400Status,
)
from .v1_extraction_batches_retrieve_response_400_type import (
    V1ExtractionBatchesRetrieveResponse400Type,
)
from .v1_extraction_batches_retrieve_response_401 import (
    V1ExtractionBatchesRetrieveResponse401,
)
from .v1_extraction_batches_retrieve_response_401_status import (
    V1ExtractionBatchesRetrieveResponse401Status,
)
from .v1_extraction_batches_retrieve_response_401_type import (
    V1ExtractionBatchesRetrieveResponse401Type,
)
from .v1_extraction_batches_retrieve_response_403 import (
    V1ExtractionBatchesRetrieveResponse403,
)
from .v1_extraction_batches_retrieve_response_403_status import (
    V1ExtractionBatchesRetrieveResponse403Status,
)
from .v1_extraction_batches_retrieve_response_403_type import (
    V1ExtractionBatchesRetrieveResponse403Type,
)
from .v1_extraction_batches_retrieve_response_404 import (
    V1ExtractionBatchesRetrieveResponse404,
)
from .v1_extraction_batches_retrieve_response_404_status import (
    V1ExtractionBatchesRetrieveResponse404Status,
)
from .v1_extraction_batches_retrieve_response_404_type import (
    V1ExtractionBatchesRetrieveResponse404Type,
)
from .v1_extraction_batches_retrieve_response_406 import (
    V1ExtractionBatchesRetrieveResponse406,
)
from .v1_extraction_batches_retrieve_response_406_status import (
    V1ExtractionBatchesRetrieveResponse406Status,
)
from .v1_extraction_batches_retrieve_response_406_type import (
    V1ExtractionBatchesRetrieveResponse406Type,
)
from .v1_extraction_jobs_cancel_response_201 import V1ExtractionJobsCancelResponse201
from .v1_extraction_jobs_cancel_response_400 import V1ExtractionJobsCancelResponse400
from .v1_extraction_jobs_cancel_response_400_status import (
    V1ExtractionJobsCancelResponse400Status,
)
from .v1_extraction_jobs_cancel_response_400_type import (
    V1ExtractionJobsCancelResponse400Type,
)
from .v1_extraction_jobs_cancel_response_401 import V1ExtractionJobsCancelResponse401
from .v1_extraction_jobs_cancel_response_401_status import (
    V1ExtractionJobsCancelResponse401Status,
)
from .v1_extraction_jobs_cancel_response_401_type import (
    V1ExtractionJobsCancelResponse401Type,
)
from .v1_extraction_jobs_cancel_response_403 import V1ExtractionJobsCancelResponse403
from .v1_extraction_jobs_cancel_response_403_status import (
    V1ExtractionJobsCancelResponse403Status,
)
from .v1_extraction_jobs_cancel_response_403_type import (
    V1ExtractionJobsCancelResponse403Type,
)
from .v1_extraction_jobs_cancel_response_406 import V1ExtractionJobsCancelResponse406
from .v1_extraction_jobs_cancel_response_406_status import (
    V1ExtractionJobsCancelResponse406Status,
)
from .v1_extraction_jobs_cancel_response_406_type import (
    V1ExtractionJobsCancelResponse406Type,
)
from .v1_extraction_jobs_cancel_response_413 import V1ExtractionJobsCancelResponse413
from .v1_extraction_jobs_cancel_response_413_status import (
    V1ExtractionJobsCancelResponse413Status,
)
from .v1_extraction_jobs_cancel_response_413_type import (
    V1ExtractionJobsCancelResponse413Type,
)
from .v1_extraction_jobs_cancel_response_415 import V1ExtractionJobsCancelResponse415
from .v1_extraction_jobs_cancel_response_415_status import (
    V1ExtractionJobsCancelResponse415Status,
)
from .v1_extraction_jobs_cancel_response_415_type import (
    V1ExtractionJobsCancelResponse415Type,
)
from .v1_extraction_jobs_cancel_response_422 import V1ExtractionJobsCancelResponse422
from .v1_extraction_jobs_cancel_response_422_status import (
    V1ExtractionJobsCancelResponse422Status,
)
from .v1_extraction_jobs_cancel_response_422_type import (
    V1ExtractionJobsCancelResponse422Type,
)
from .v1_extraction_jobs_create_response_202 import V1ExtractionJobsCreateResponse202
from .v1_extraction_jobs_create_response_400 import V1ExtractionJobsCreateResponse400
from .v1_extraction_jobs_create_response_400_status import (
    V1ExtractionJobsCreateResponse400Status,
)
from .v1_extraction_jobs_create_response_400_type import (
    V1ExtractionJobsCreateResponse400Type,
)
from .v1_extraction_jobs_create_response_401 import V1ExtractionJobsCreateResponse401
from .v1_extraction_jobs_create_response_401_status import (
    V1ExtractionJobsCreateResponse401Status,
)
from .v1_extraction_jobs_create_response_401_type import (
    V1ExtractionJobsCreateResponse401Type,
)
from .v1_extraction_jobs_create_response_403 import V1ExtractionJobsCreateResponse403
from .v1_extraction_jobs_create_response_403_status import (
    V1ExtractionJobsCreateResponse403Status,
)
from .v1_extraction_jobs_create_response_403_type import (
    V1ExtractionJobsCreateResponse403Type,
)
from .v1_extraction_jobs_create_response_406 import V1ExtractionJobsCreateResponse406
from .v1_extraction_jobs_create_response_406_status import (
    V1ExtractionJobsCreateResponse406Status,
)
from .v1_extraction_jobs_create_response_406_type import (
    V1ExtractionJobsCreateResponse406Type,
)
from .v1_extraction_jobs_create_response_409 import V1ExtractionJobsCreateResponse409
from .v1_extraction_jobs_create_response_409_status import (
    V1ExtractionJobsCreateResponse409Status,
)
from .v1_extraction_jobs_create_response_409_type import (
    V1ExtractionJobsCreateResponse409Type,
)
from .v1_extraction_jobs_create_response_413 import V1ExtractionJobsCreateResponse413
from .v1_extraction_jobs_create_response_413_status import (
    V1ExtractionJobsCreateResponse413Status,
)
from .v1_extraction_jobs_create_response_413_type import (
    V1ExtractionJobsCreateResponse413Type,
)
from .v1_extraction_jobs_create_response_415 import V1ExtractionJobsCreateResponse415
from .v1_extraction_jobs_create_response_415_status import (
    V1ExtractionJobsCreateResponse415Status,
)
from .v1_extraction_jobs_create_response_415_type import (
    V1ExtractionJobsCreateResponse415Type,
)
from .v1_extraction_jobs_create_response_422 import V1ExtractionJobsCreateResponse422
from .v1_extraction_jobs_create_response_422_status import (
    V1ExtractionJobsCreateResponse422Status,
)
from .v1_extraction_jobs_create_response_422_type import (
    V1ExtractionJobsCreateResponse422Type,
)
from .v1_extraction_jobs_create_response_429 import V1ExtractionJobsCreateResponse429
from .v1_extraction_jobs_create_response_429_status import (
    V1ExtractionJobsCreateResponse429Status,
)
from .v1_extraction_jobs_create_response_429_type import (
    V1ExtractionJobsCreateResponse429Type,
)
from .v1_extraction_jobs_create_response_503 import V1ExtractionJobsCreateResponse503
from .v1_extraction_jobs_create_response_503_status import (
    V1ExtractionJobsCreateResponse503Status,
)
from .v1_extraction_jobs_create_response_503_type import (
    V1ExtractionJobsCreateResponse503Type,
)
from .v1_extraction_jobs_document_text_retrieve_response_200 import (
    V1ExtractionJobsDocumentTextRetrieveResponse200,
)
from .v1_extraction_jobs_document_text_retrieve_response_401 import (
    V1ExtractionJobsDocumentTextRetrieveResponse401,
)
from .v1_extraction_jobs_document_text_retrieve_response_401_status import (
    V1ExtractionJobsDocumentTextRetrieveResponse401Status,
)
from .v1_extraction_jobs_document_text_retrieve_response_401_type import (
    V1ExtractionJobsDocumentTextRetrieveResponse401Type,
)
from .v1_extraction_jobs_document_text_retrieve_response_403 import (
    V1ExtractionJobsDocumentTextRetrieveResponse403,
)
from .v1_extraction_jobs_document_text_retrieve_response_403_status import (
    V1ExtractionJobsDocumentTextRetrieveResponse403Status,
)
from .v1_extraction_jobs_document_text_retrieve_response_403_type import (
    V1ExtractionJobsDocumentTextRetrieveResponse403Type,
)
from .v1_extraction_jobs_document_text_retrieve_response_404 import (
    V1ExtractionJobsDocumentTextRetrieveResponse404,
)
from .v1_extraction_jobs_document_text_retrieve_response_404_status import (
    V1ExtractionJobsDocumentTextRetrieveResponse404Status,
)
from .v1_extraction_jobs_document_text_retrieve_response_404_type import (
    V1ExtractionJobsDocumentTextRetrieveResponse404Type,
)
from .v1_extraction_jobs_document_text_retrieve_response_406 import (
    V1ExtractionJobsDocumentTextRetrieveResponse406,
)
from .v1_extraction_jobs_document_text_retrieve_response_406_status import (
    V1ExtractionJobsDocumentTextRetrieveResponse406Status,
)
from .v1_extraction_jobs_document_text_retrieve_response_406_type import (
    V1ExtractionJobsDocumentTextRetrieveResponse406Type,
)
from .v1_extraction_jobs_list_response_200 import V1ExtractionJobsListResponse200
from .v1_extraction_jobs_list_response_400 import V1ExtractionJobsListResponse400
from .v1_extraction_jobs_list_response_400_status import (
    V1ExtractionJobsListResponse400Status,
)
from .v1_extraction_jobs_list_response_400_type import (
    V1ExtractionJobsListResponse400Type,
)
from .v1_extraction_jobs_list_response_401 import V1ExtractionJobsListResponse401
from .v1_extraction_jobs_list_response_401_status import (
    V1ExtractionJobsListResponse401Status,
)
from .v1_extraction_jobs_list_response_401_type import (
    V1ExtractionJobsListResponse401Type,
)
from .v1_extraction_jobs_list_response_403 import V1ExtractionJobsListResponse403
from .v1_extraction_jobs_list_response_403_status import (
    V1ExtractionJobsListResponse403Status,
)
from .v1_extraction_jobs_list_response_403_type import (
    V1ExtractionJobsListResponse403Type,
)
from .v1_extraction_jobs_list_response_404 import V1ExtractionJobsListResponse404
from .v1_extraction_jobs_list_response_404_status import (
    V1ExtractionJobsListResponse404Status,
)
from .v1_extraction_jobs_list_response_404_type import (
    V1ExtractionJobsListResponse404Type,
)
from .v1_extraction_jobs_list_response_406 import V1ExtractionJobsListResponse406
from .v1_extraction_jobs_list_response_406_status import (
    V1ExtractionJobsListResponse406Status,
)
from .v1_extraction_jobs_list_response_406_type import (
    V1ExtractionJobsListResponse406Type,
)
from .v1_extraction_jobs_list_state import V1ExtractionJobsListState
from .v1_extraction_jobs_rerun_response_201 import V1ExtractionJobsRerunResponse201
from .v1_extraction_jobs_rerun_response_400 import V1ExtractionJobsRerunResponse400
from .v1_extraction_jobs_rerun_response_400_status import (
    V1ExtractionJobsRerunResponse400Status,
)
from .v1_extraction_jobs_rerun_response_400_type import (
    V1ExtractionJobsRerunResponse400Type,
)
from .v1_extraction_jobs_rerun_response_401 import V1ExtractionJobsRerunResponse401
from .v1_extraction_jobs_rerun_response_401_status import (
    V1ExtractionJobsRerunResponse401Status,
)
from .v1_extraction_jobs_rerun_response_401_type import (
    V1ExtractionJobsRerunResponse401Type,
)
from .v1_extraction_jobs_rerun_response_403 import V1ExtractionJobsRerunResponse403
from .v1_extraction_jobs_rerun_response_403_status import (
    V1ExtractionJobsRerunResponse403Status,
)
from .v1_extraction_jobs_rerun_response_403_type import (
    V1ExtractionJobsRerunResponse403Type,
)
from .v1_extraction_jobs_rerun_response_406 import V1ExtractionJobsRerunResponse406
from .v1_extraction_jobs_rerun_response_406_status import (
    V1ExtractionJobsRerunResponse406Status,
)
from .v1_extraction_jobs_rerun_response_406_type import (
    V1ExtractionJobsRerunResponse406Type,
)
from .v1_extraction_jobs_rerun_response_413 import V1ExtractionJobsRerunResponse413
from .v1_extraction_jobs_rerun_response_413_status import (
    V1ExtractionJobsRerunResponse413Status,
)
from .v1_extraction_jobs_rerun_response_413_type import (
    V1ExtractionJobsRerunResponse413Type,
)
from .v1_extraction_jobs_rerun_response_415 import V1ExtractionJobsRerunResponse415
from .v1_extraction_jobs_rerun_response_415_status import (
    V1ExtractionJobsRerunResponse415Status,
)
from .v1_extraction_jobs_rerun_response_415_type import (
    V1ExtractionJobsRerunResponse415Type,
)
from .v1_extraction_jobs_rerun_response_422 import V1ExtractionJobsRerunResponse422
from .v1_extraction_jobs_rerun_response_422_status import (
    V1ExtractionJobsRerunResponse422Status,
)
from .v1_extraction_jobs_rerun_response_422_type import (
    V1ExtractionJobsRerunResponse422Type,
)
from .v1_extraction_jobs_retrieve_response_401 import (
    V1ExtractionJobsRetrieveResponse401,
)
from .v1_extraction_jobs_retrieve_response_401_status import (
    V1ExtractionJobsRetrieveResponse401Status,
)
from .v1_extraction_jobs_retrieve_response_401_type import (
    V1ExtractionJobsRetrieveResponse401Type,
)
from .v1_extraction_jobs_retrieve_response_403 import (
    V1ExtractionJobsRetrieveResponse403,
)
from .v1_extraction_jobs_retrieve_response_403_status import (
    V1ExtractionJobsRetrieveResponse403Status,
)
from .v1_extraction_jobs_retrieve_response_403_type import (
    V1ExtractionJobsRetrieveResponse403Type,
)
from .v1_extraction_jobs_retrieve_response_404 import (
    V1ExtractionJobsRetrieveResponse404,
)
from .v1_extraction_jobs_retrieve_response_404_status import (
    V1ExtractionJobsRetrieveResponse404Status,
)
from .v1_extraction_jobs_retrieve_response_404_type import (
    V1ExtractionJobsRetrieveResponse404Type,
)
from .v1_extraction_jobs_retrieve_response_406 import (
    V1ExtractionJobsRetrieveResponse406,
)
from .v1_extraction_jobs_retrieve_response_406_status import (
    V1ExtractionJobsRetrieveResponse406Status,
)
from .v1_extraction_jobs_retrieve_response_406_type import (
    V1ExtractionJobsRetrieveResponse406Type,
)
from .v1_notification_tickets_create_response_201 import (
    V1NotificationTicketsCreateResponse201,
)
from .v1_notification_tickets_create_response_401 import (
    V1NotificationTicketsCreateResponse401,
)
from .v1_notification_tickets_create_response_401_status import (
    V1NotificationTicketsCreateResponse401Status,
)
from .v1_notification_tickets_create_response_401_type import (
    V1NotificationTicketsCreateResponse401Type,
)
from .v1_notification_tickets_create_response_403 import (
    V1NotificationTicketsCreateResponse403,
)
from .v1_notification_tickets_create_response_403_status import (
    V1NotificationTicketsCreateResponse403Status,
)
from .v1_notification_tickets_create_response_403_type import (
    V1NotificationTicketsCreateResponse403Type,
)
from .v1_notification_tickets_create_response_406 import (
    V1NotificationTicketsCreateResponse406,
)
from .v1_notification_tickets_create_response_406_status import (
    V1NotificationTicketsCreateResponse406Status,
)
from .v1_notification_tickets_create_response_406_type import (
    V1NotificationTicketsCreateResponse406Type,
)
from .v1_operator_actions_list_response_200 import V1OperatorActionsListResponse200
from .v1_operator_actions_list_response_401 import V1OperatorActionsListResponse401
from .v1_operator_actions_list_response_401_status import (
    V1OperatorActionsListResponse401Status,
)
from .v1_operator_actions_list_response_401_type import (
    V1OperatorActionsListResponse401Type,
)
from .v1_operator_actions_list_response_403 import V1OperatorActionsListResponse403
from .v1_operator_actions_list_response_403_status import (
    V1OperatorActionsListResponse403Status,
)
from .v1_operator_actions_list_response_403_type import (
    V1OperatorActionsListResponse403Type,
)
from .v1_operator_actions_list_response_406 import V1OperatorActionsListResponse406
from .v1_operator_actions_list_response_406_status import (
    V1OperatorActionsListResponse406Status,
)
from .v1_operator_actions_list_response_406_type import (
    V1OperatorActionsListResponse406Type,
)
from .v1_operator_actions_retrieve_response_200 import (
    V1OperatorActionsRetrieveResponse200,
)
from .v1_operator_actions_retrieve_response_401 import (
    V1OperatorActionsRetrieveResponse401,
)
from .v1_operator_actions_retrieve_response_401_status import (
    V1OperatorActionsRetrieveResponse401Status,
)
from .v1_operator_actions_retrieve_response_401_type import (
    V1OperatorActionsRetrieveResponse401Type,
)
from .v1_operator_actions_retrieve_response_403 import (
    V1OperatorActionsRetrieveResponse403,
)
from .v1_operator_actions_retrieve_response_403_status import (
    V1OperatorActionsRetrieveResponse403Status,
)
from .v1_operator_actions_retrieve_response_403_type import (
    V1OperatorActionsRetrieveResponse403Type,
)
from .v1_operator_actions_retrieve_response_404 import (
    V1OperatorActionsRetrieveResponse404,
)
from .v1_operator_actions_retrieve_response_404_status import (
    V1OperatorActionsRetrieveResponse404Status,
)
from .v1_operator_actions_retrieve_response_404_type import (
    V1OperatorActionsRetrieveResponse404Type,
)
from .v1_operator_actions_retrieve_response_406 import (
    V1OperatorActionsRetrieveResponse406,
)
from .v1_operator_actions_retrieve_response_406_status import (
    V1OperatorActionsRetrieveResponse406Status,
)
from .v1_operator_actions_retrieve_response_406_type import (
    V1OperatorActionsRetrieveResponse406Type,
)
from .v1_webhook_deliveries_redeliver_response_201 import (
    V1WebhookDeliveriesRedeliverResponse201,
)
from .v1_webhook_deliveries_redeliver_response_400 import (
    V1WebhookDeliveriesRedeliverResponse400,
)
from .v1_webhook_deliveries_redeliver_response_400_status import (
    V1WebhookDeliveriesRedeliverResponse400Status,
)
from .v1_webhook_deliveries_redeliver_response_400_type import (
    V1WebhookDeliveriesRedeliverResponse400Type,
)
from .v1_webhook_deliveries_redeliver_response_401 import (
    V1WebhookDeliveriesRedeliverResponse401,
)
from .v1_webhook_deliveries_redeliver_response_401_status import (
    V1WebhookDeliveriesRedeliverResponse401Status,
)
from .v1_webhook_deliveries_redeliver_response_401_type import (
    V1WebhookDeliveriesRedeliverResponse401Type,
)
from .v1_webhook_deliveries_redeliver_response_403 import (
    V1WebhookDeliveriesRedeliverResponse403,
)
from .v1_webhook_deliveries_redeliver_response_403_status import (
    V1WebhookDeliveriesRedeliverResponse403Status,
)
from .v1_webhook_deliveries_redeliver_response_403_type import (
    V1WebhookDeliveriesRedeliverResponse403Type,
)
from .v1_webhook_deliveries_redeliver_response_406 import (
    V1WebhookDeliveriesRedeliverResponse406,
)
from .v1_webhook_deliveries_redeliver_response_406_status import (
    V1WebhookDeliveriesRedeliverResponse406Status,
)
from .v1_webhook_deliveries_redeliver_response_406_type import (
    V1WebhookDeliveriesRedeliverResponse406Type,
)
from .v1_webhook_deliveries_redeliver_response_413 import (
    V1WebhookDeliveriesRedeliverResponse413,
)
from .v1_webhook_deliveries_redeliver_response_413_status import (
    V1WebhookDeliveriesRedeliverResponse413Status,
)
from .v1_webhook_deliveries_redeliver_response_413_type import (
    V1WebhookDeliveriesRedeliverResponse413Type,
)
from .v1_webhook_deliveries_redeliver_response_415 import (
    V1WebhookDeliveriesRedeliverResponse415,
)
from .v1_webhook_deliveries_redeliver_response_415_status import (
    V1WebhookDeliveriesRedeliverResponse415Status,
)
from .v1_webhook_deliveries_redeliver_response_415_type import (
    V1WebhookDeliveriesRedeliverResponse415Type,
)
from .v1_webhook_endpoints_create_response_201 import (
    V1WebhookEndpointsCreateResponse201,
)
from .v1_webhook_endpoints_create_response_400 import (
    V1WebhookEndpointsCreateResponse400,
)
from .v1_webhook_endpoints_create_response_400_status import (
    V1WebhookEndpointsCreateResponse400Status,
)
from .v1_webhook_endpoints_create_response_400_type import (
    V1WebhookEndpointsCreateResponse400Type,
)
from .v1_webhook_endpoints_create_response_401 import (
    V1WebhookEndpointsCreateResponse401,
)
from .v1_webhook_endpoints_create_response_401_status import (
    V1WebhookEndpointsCreateResponse401Status,
)
from .v1_webhook_endpoints_create_response_401_type import (
    V1WebhookEndpointsCreateResponse401Type,
)
from .v1_webhook_endpoints_create_response_403 import (
    V1WebhookEndpointsCreateResponse403,
)
from .v1_webhook_endpoints_create_response_403_status import (
    V1WebhookEndpointsCreateResponse403Status,
)
from .v1_webhook_endpoints_create_response_403_type import (
    V1WebhookEndpointsCreateResponse403Type,
)
from .v1_webhook_endpoints_create_response_406 import (
    V1WebhookEndpointsCreateResponse406,
)
from .v1_webhook_endpoints_create_response_406_status import (
    V1WebhookEndpointsCreateResponse406Status,
)
from .v1_webhook_endpoints_create_response_406_type import (
    V1WebhookEndpointsCreateResponse406Type,
)
from .v1_webhook_endpoints_create_response_413 import (
    V1WebhookEndpointsCreateResponse413,
)
from .v1_webhook_endpoints_create_response_413_status import (
    V1WebhookEndpointsCreateResponse413Status,
)
from .v1_webhook_endpoints_create_response_413_type import (
    V1WebhookEndpointsCreateResponse413Type,
)
from .v1_webhook_endpoints_create_response_415 import (
    V1WebhookEndpointsCreateResponse415,
)
from .v1_webhook_endpoints_create_response_415_status import (
    V1WebhookEndpointsCreateResponse415Status,
)
from .v1_webhook_endpoints_create_response_415_type import (
    V1WebhookEndpointsCreateResponse415Type,
)
from .v1_webhook_endpoints_create_response_422 import (
    V1WebhookEndpointsCreateResponse422,
)
from .v1_webhook_endpoints_create_response_422_status import (
    V1WebhookEndpointsCreateResponse422Status,
)
from .v1_webhook_endpoints_create_response_422_type import (
    V1WebhookEndpointsCreateResponse422Type,
)
from .v1_webhook_endpoints_deliveries_retrieve_response_200 import (
    V1WebhookEndpointsDeliveriesRetrieveResponse200,
)
from .v1_webhook_endpoints_deliveries_retrieve_response_400 import (
    V1WebhookEndpointsDeliveriesRetrieveResponse400,
)
from .v1_webhook_endpoints_deliveries_retrieve_response_400_status import (
    V1WebhookEndpointsDeliveriesRetrieveResponse400Status,
)
from .v1_webhook_endpoints_deliveries_retrieve_response_400_type import (
    V1WebhookEndpointsDeliveriesRetrieveResponse400Type,
)
from .v1_webhook_endpoints_deliveries_retrieve_response_401 import (
    V1WebhookEndpointsDeliveriesRetrieveResponse401,
)
from .v1_webhook_endpoints_deliveries_retrieve_response_401_status import (
    V1WebhookEndpointsDeliveriesRetrieveResponse401Status,
)
from .v1_webhook_endpoints_deliveries_retrieve_response_401_type import (
    V1WebhookEndpointsDeliveriesRetrieveResponse401Type,
)
from .v1_webhook_endpoints_deliveries_retrieve_response_403 import (
    V1WebhookEndpointsDeliveriesRetrieveResponse403,
)
from .v1_webhook_endpoints_deliveries_retrieve_response_403_status import (
    V1WebhookEndpointsDeliveriesRetrieveResponse403Status,
)
from .v1_webhook_endpoints_deliveries_retrieve_response_403_type import (
    V1WebhookEndpointsDeliveriesRetrieveResponse403Type,
)
from .v1_webhook_endpoints_deliveries_retrieve_response_404 import (
    V1WebhookEndpointsDeliveriesRetrieveResponse404,
)
from .v1_webhook_endpoints_deliveries_retrieve_response_404_status import (
    V1WebhookEndpointsDeliveriesRetrieveResponse404Status,
)
from .v1_webhook_endpoints_deliveries_retrieve_response_404_type import (
    V1WebhookEndpointsDeliveriesRetrieveResponse404Type,
)
from .v1_webhook_endpoints_deliveries_retrieve_response_406 import (
    V1WebhookEndpointsDeliveriesRetrieveResponse406,
)
from .v1_webhook_endpoints_deliveries_retrieve_response_406_status import (
    V1WebhookEndpointsDeliveriesRetrieveResponse406Status,
)
from .v1_webhook_endpoints_deliveries_retrieve_response_406_type import (
    V1WebhookEndpointsDeliveriesRetrieveResponse406Type,
)
from .v1_webhook_endpoints_deliveries_retrieve_state import (
    V1WebhookEndpointsDeliveriesRetrieveState,
)
from .v1_webhook_endpoints_destroy_response_401 import (
    V1WebhookEndpointsDestroyResponse401,
)
from .v1_webhook_endpoints_destroy_response_401_status import (
    V1WebhookEndpointsDestroyResponse401Status,
)
from .v1_webhook_endpoints_destroy_response_401_type import (
    V1WebhookEndpointsDestroyResponse401Type,
)
from .v1_webhook_endpoints_destroy_response_403 import (
    V1WebhookEndpointsDestroyResponse403,
)
from .v1_webhook_endpoints_destroy_response_403_status import (
    V1WebhookEndpointsDestroyResponse403Status,
)
from .v1_webhook_endpoints_destroy_response_403_type import (
    V1WebhookEndpointsDestroyResponse403Type,
)
from .v1_webhook_endpoints_destroy_response_404 import (
    V1WebhookEndpointsDestroyResponse404,
)
from .v1_webhook_endpoints_destroy_response_404_status import (
    V1WebhookEndpointsDestroyResponse404Status,
)
from .v1_webhook_endpoints_destroy_response_404_type import (
    V1WebhookEndpointsDestroyResponse404Type,
)
from .v1_webhook_endpoints_destroy_response_406 import (
    V1WebhookEndpointsDestroyResponse406,
)
from .v1_webhook_endpoints_destroy_response_406_status import (
    V1WebhookEndpointsDestroyResponse406Status,
)
from .v1_webhook_endpoints_destroy_response_406_type import (
    V1WebhookEndpointsDestroyResponse406Type,
)
from .v1_webhook_endpoints_list_response_200 import V1WebhookEndpointsListResponse200
from .v1_webhook_endpoints_list_response_401 import V1WebhookEndpointsListResponse401
from .v1_webhook_endpoints_list_response_401_status import (
    V1WebhookEndpointsListResponse401Status,
)
from .v1_webhook_endpoints_list_response_401_type import (
    V1WebhookEndpointsListResponse401Type,
)
from .v1_webhook_endpoints_list_response_403 import V1WebhookEndpointsListResponse403
from .v1_webhook_endpoints_list_response_403_status import (
    V1WebhookEndpointsListResponse403Status,
)
from .v1_webhook_endpoints_list_response_403_type import (
    V1WebhookEndpointsListResponse403Type,
)
from .v1_webhook_endpoints_list_response_406 import V1WebhookEndpointsListResponse406
from .v1_webhook_endpoints_list_response_406_status import (
    V1WebhookEndpointsListResponse406Status,
)
from .v1_webhook_endpoints_list_response_406_type import (
    V1WebhookEndpointsListResponse406Type,
)
from .v1_webhook_endpoints_retrieve_response_200 import (
    V1WebhookEndpointsRetrieveResponse200,
)
from .v1_webhook_endpoints_retrieve_response_401 import (
    V1WebhookEndpointsRetrieveResponse401,
)
from .v1_webhook_endpoints_retrieve_response_401_status import (
    V1WebhookEndpointsRetrieveResponse401Status,
)
from .v1_webhook_endpoints_retrieve_response_401_type import (
    V1WebhookEndpointsRetrieveResponse401Type,
)
from .v1_webhook_endpoints_retrieve_response_403 import (
    V1WebhookEndpointsRetrieveResponse403,
)
from .v1_webhook_endpoints_retrieve_response_403_status import (
    V1WebhookEndpointsRetrieveResponse403Status,
)
from .v1_webhook_endpoints_retrieve_response_403_type import (
    V1WebhookEndpointsRetrieveResponse403Type,
)
from .v1_webhook_endpoints_retrieve_response_404 import (
    V1WebhookEndpointsRetrieveResponse404,
)
from .v1_webhook_endpoints_retrieve_response_404_status import (
    V1WebhookEndpointsRetrieveResponse404Status,
)
from .v1_webhook_endpoints_retrieve_response_404_type import (
    V1WebhookEndpointsRetrieveResponse404Type,
)
from .v1_webhook_endpoints_retrieve_response_406 import (
    V1WebhookEndpointsRetrieveResponse406,
)
from .v1_webhook_endpoints_retrieve_response_406_status import (
    V1WebhookEndpointsRetrieveResponse406Status,
)
from .v1_webhook_endpoints_retrieve_response_406_type import (
    V1WebhookEndpointsRetrieveResponse406Type,
)
from .v1_webhook_endpoints_rotate_secret_create_response_200 import (
    V1WebhookEndpointsRotateSecretCreateResponse200,
)
from .v1_webhook_endpoints_rotate_secret_create_response_401 import (
    V1WebhookEndpointsRotateSecretCreateResponse401,
)
from .v1_webhook_endpoints_rotate_secret_create_response_401_status import (
    V1WebhookEndpointsRotateSecretCreateResponse401Status,
)
from .v1_webhook_endpoints_rotate_secret_create_response_401_type import (
    V1WebhookEndpointsRotateSecretCreateResponse401Type,
)
from .v1_webhook_endpoints_rotate_secret_create_response_403 import (
    V1WebhookEndpointsRotateSecretCreateResponse403,
)
from .v1_webhook_endpoints_rotate_secret_create_response_403_status import (
    V1WebhookEndpointsRotateSecretCreateResponse403Status,
)
from .v1_webhook_endpoints_rotate_secret_create_response_403_type import (
    V1WebhookEndpointsRotateSecretCreateResponse403Type,
)
from .v1_webhook_endpoints_rotate_secret_create_response_404 import (
    V1WebhookEndpointsRotateSecretCreateResponse404,
)
from .v1_webhook_endpoints_rotate_secret_create_response_404_status import (
    V1WebhookEndpointsRotateSecretCreateResponse404Status,
)
from .v1_webhook_endpoints_rotate_secret_create_response_404_type import (
    V1WebhookEndpointsRotateSecretCreateResponse404Type,
)
from .v1_webhook_endpoints_rotate_secret_create_response_406 import (
    V1WebhookEndpointsRotateSecretCreateResponse406,
)
from .v1_webhook_endpoints_rotate_secret_create_response_406_status import (
    V1WebhookEndpointsRotateSecretCreateResponse406Status,
)
from .v1_webhook_endpoints_rotate_secret_create_response_406_type import (
    V1WebhookEndpointsRotateSecretCreateResponse406Type,
)
from .v1_webhook_endpoints_verify_create_response_202 import (
    V1WebhookEndpointsVerifyCreateResponse202,
)
from .v1_webhook_endpoints_verify_create_response_401 import (
    V1WebhookEndpointsVerifyCreateResponse401,
)
from .v1_webhook_endpoints_verify_create_response_401_status import (
    V1WebhookEndpointsVerifyCreateResponse401Status,
)
from .v1_webhook_endpoints_verify_create_response_401_type import (
    V1WebhookEndpointsVerifyCreateResponse401Type,
)
from .v1_webhook_endpoints_verify_create_response_403 import (
    V1WebhookEndpointsVerifyCreateResponse403,
)
from .v1_webhook_endpoints_verify_create_response_403_status import (
    V1WebhookEndpointsVerifyCreateResponse403Status,
)
from .v1_webhook_endpoints_verify_create_response_403_type import (
    V1WebhookEndpointsVerifyCreateResponse403Type,
)
from .v1_webhook_endpoints_verify_create_response_404 import (
    V1WebhookEndpointsVerifyCreateResponse404,
)
from .v1_webhook_endpoints_verify_create_response_404_status import (
    V1WebhookEndpointsVerifyCreateResponse404Status,
)
from .v1_webhook_endpoints_verify_create_response_404_type import (
    V1WebhookEndpointsVerifyCreateResponse404Type,
)
from .v1_webhook_endpoints_verify_create_response_406 import (
    V1WebhookEndpointsVerifyCreateResponse406,
)
from .v1_webhook_endpoints_verify_create_response_406_status import (
    V1WebhookEndpointsVerifyCreateResponse406Status,
)
from .v1_webhook_endpoints_verify_create_response_406_type import (
    V1WebhookEndpointsVerifyCreateResponse406Type,
)
from .v1_webhook_endpoints_verify_create_response_422 import (
    V1WebhookEndpointsVerifyCreateResponse422,
)
from .v1_webhook_endpoints_verify_create_response_422_status import (
    V1WebhookEndpointsVerifyCreateResponse422Status,
)
from .v1_webhook_endpoints_verify_create_response_422_type import (
    V1WebhookEndpointsVerifyCreateResponse422Type,
)
from .validation import Validation
from .validation_checks_item import ValidationChecksItem
from .validation_fields import ValidationFields
from .webhook_event_type_enum import WebhookEventTypeEnum

__all__ = (
    "AllowanceOrCharge",
    "AllowanceOrChargeAmount",
    "AllowanceOrChargeBaseAmount",
    "AllowanceOrChargePercentage",
    "AllowanceOrChargeReason",
    "AllowanceOrChargeReasonCode",
    "AllowanceOrChargeTaxCategory",
    "AllowanceOrChargeTaxRate",
    "BatchAccepted",
    "BatchAcceptedItemsItem",
    "BatchAcceptedItemsItemDocumentType0",
    "BatchAcceptedItemsItemJobType0",
    "BatchAcceptedItemsItemJobType0State",
    "BatchAcceptedOptions",
    "BatchAcceptedSchema",
    "BatchAcceptedStates",
    "BatchCreateRequest",
    "BatchDetail",
    "BatchDetailItemsItem",
    "BatchDetailItemsItemDocumentType0",
    "BatchDetailItemsItemJobType0",
    "BatchDetailItemsItemJobType0State",
    "BatchDetailOptions",
    "BatchDetailSchema",
    "BatchDetailStates",
    "Document",
    "DocumentUploadRequest",
    "EndpointCreateRequest",
    "Evidence",
    "FieldTrust",
    "FieldTrustSourcesItem",
    "FieldTrustStatus",
    "InvoiceV1",
    "InvoiceV1Currency",
    "InvoiceV1DocumentType",
    "InvoiceV1DocumentTypeValueType1",
    "InvoiceV1DocumentTypeValueType2Type1",
    "InvoiceV1DocumentTypeValueType3Type1",
    "InvoiceV1DueDate",
    "InvoiceV1InvoiceNumber",
    "InvoiceV1IssueDate",
    "InvoiceV1LinesItem",
    "InvoiceV1LinesItemDescription",
    "InvoiceV1LinesItemNetAmount",
    "InvoiceV1LinesItemQuantity",
    "InvoiceV1LinesItemTaxAmount",
    "InvoiceV1LinesItemTaxRate",
    "InvoiceV1LinesItemUnitPrice",
    "InvoiceV1Schema",
    "InvoiceV1Supplier",
    "InvoiceV1SupplierIban",
    "InvoiceV1SupplierName",
    "InvoiceV1SupplierVatId",
    "InvoiceV1Totals",
    "InvoiceV1TotalsAmountDue",
    "InvoiceV1TotalsGross",
    "InvoiceV1TotalsNet",
    "InvoiceV1TotalsPrepaid",
    "InvoiceV1TotalsTax",
    "InvoiceV2",
    "InvoiceV2Buyer",
    "InvoiceV2BuyerName",
    "InvoiceV2BuyerReference",
    "InvoiceV2BuyerVatId",
    "InvoiceV2Currency",
    "InvoiceV2DocumentType",
    "InvoiceV2DocumentTypeValueType1",
    "InvoiceV2DocumentTypeValueType2Type1",
    "InvoiceV2DocumentTypeValueType3Type1",
    "InvoiceV2DueDate",
    "InvoiceV2InvoiceNumber",
    "InvoiceV2IssueDate",
    "InvoiceV2LinesItem",
    "InvoiceV2LinesItemDescription",
    "InvoiceV2LinesItemNetAmount",
    "InvoiceV2LinesItemPriceBaseQuantity",
    "InvoiceV2LinesItemQuantity",
    "InvoiceV2LinesItemTaxAmount",
    "InvoiceV2LinesItemTaxCategory",
    "InvoiceV2LinesItemTaxRate",
    "InvoiceV2LinesItemUnitPrice",
    "InvoiceV2OrderReference",
    "InvoiceV2PaymentTerms",
    "InvoiceV2Schema",
    "InvoiceV2Supplier",
    "InvoiceV2SupplierIban",
    "InvoiceV2SupplierName",
    "InvoiceV2SupplierVatId",
    "InvoiceV2TaxBreakdownItem",
    "InvoiceV2TaxBreakdownItemCategory",
    "InvoiceV2TaxBreakdownItemExemptionReason",
    "InvoiceV2TaxBreakdownItemExemptionReasonCode",
    "InvoiceV2TaxBreakdownItemRate",
    "InvoiceV2TaxBreakdownItemTaxAmount",
    "InvoiceV2TaxBreakdownItemTaxableAmount",
    "InvoiceV2Totals",
    "InvoiceV2TotalsAllowanceTotal",
    "InvoiceV2TotalsAmountDue",
    "InvoiceV2TotalsChargeTotal",
    "InvoiceV2TotalsGross",
    "InvoiceV2TotalsLineTotal",
    "InvoiceV2TotalsNet",
    "InvoiceV2TotalsPrepaid",
    "InvoiceV2TotalsRounding",
    "InvoiceV2TotalsTax",
    "JobActionRequest",
    "JobCreateRequest",
    "JobDetail",
    "JobDetailSchema",
    "JobFilterRequest",
    "JobFilterStatesEnum",
    "JobOptionsRequest",
    "JobOptionsRequestModelPolicy",
    "JobResult",
    "PriorityEnum",
    "Problem",
    "ProblemErrors",
    "ProblemErrorsAdditionalPropertyType1",
    "RedeliverFilterRequest",
    "RedeliverFilterStatesEnum",
    "RedeliverRequest",
    "SchemaEnum",
    "V1DocumentsCreateResponse400",
    "V1DocumentsCreateResponse400Status",
    "V1DocumentsCreateResponse400Type",
    "V1DocumentsCreateResponse401",
    "V1DocumentsCreateResponse401Status",
    "V1DocumentsCreateResponse401Type",
    "V1DocumentsCreateResponse403",
    "V1DocumentsCreateResponse403Status",
    "V1DocumentsCreateResponse403Type",
    "V1DocumentsCreateResponse406",
    "V1DocumentsCreateResponse406Status",
    "V1DocumentsCreateResponse406Type",
    "V1DocumentsCreateResponse413",
    "V1DocumentsCreateResponse413Status",
    "V1DocumentsCreateResponse413Type",
    "V1DocumentsCreateResponse415",
    "V1DocumentsCreateResponse415Status",
    "V1DocumentsCreateResponse415Type",
    "V1DocumentsCreateResponse422",
    "V1DocumentsCreateResponse422Status",
    "V1DocumentsCreateResponse422Type",
    "V1DocumentsPagesPngRetrieveResponse400",
    "V1DocumentsPagesPngRetrieveResponse400Status",
    "V1DocumentsPagesPngRetrieveResponse400Type",
    "V1DocumentsPagesPngRetrieveResponse401",
    "V1DocumentsPagesPngRetrieveResponse401Status",
    "V1DocumentsPagesPngRetrieveResponse401Type",
    "V1DocumentsPagesPngRetrieveResponse403",
    "V1DocumentsPagesPngRetrieveResponse403Status",
    "V1DocumentsPagesPngRetrieveResponse403Type",
    "V1DocumentsPagesPngRetrieveResponse404",
    "V1DocumentsPagesPngRetrieveResponse404Status",
    "V1DocumentsPagesPngRetrieveResponse404Type",
    "V1DocumentsPagesPngRetrieveResponse406",
    "V1DocumentsPagesPngRetrieveResponse406Status",
    "V1DocumentsPagesPngRetrieveResponse406Type",
    "V1DocumentsRetrieveResponse200",
    "V1DocumentsRetrieveResponse401",
    "V1DocumentsRetrieveResponse401Status",
    "V1DocumentsRetrieveResponse401Type",
    "V1DocumentsRetrieveResponse403",
    "V1DocumentsRetrieveResponse403Status",
    "V1DocumentsRetrieveResponse403Type",
    "V1DocumentsRetrieveResponse404",
    "V1DocumentsRetrieveResponse404Status",
    "V1DocumentsRetrieveResponse404Type",
    "V1DocumentsRetrieveResponse406",
    "V1DocumentsRetrieveResponse406Status",
    "V1DocumentsRetrieveResponse406Type",
    "V1ExtractionBatchesCreateResponse400",
    "V1ExtractionBatchesCreateResponse400Status",
    "V1ExtractionBatchesCreateResponse400Type",
    "V1ExtractionBatchesCreateResponse401",
    "V1ExtractionBatchesCreateResponse401Status",
    "V1ExtractionBatchesCreateResponse401Type",
    "V1ExtractionBatchesCreateResponse403",
    "V1ExtractionBatchesCreateResponse403Status",
    "V1ExtractionBatchesCreateResponse403Type",
    "V1ExtractionBatchesCreateResponse406",
    "V1ExtractionBatchesCreateResponse406Status",
    "V1ExtractionBatchesCreateResponse406Type",
    "V1ExtractionBatchesCreateResponse409",
    "V1ExtractionBatchesCreateResponse409Status",
    "V1ExtractionBatchesCreateResponse409Type",
    "V1ExtractionBatchesCreateResponse413",
    "V1ExtractionBatchesCreateResponse413Status",
    "V1ExtractionBatchesCreateResponse413Type",
    "V1ExtractionBatchesCreateResponse415",
    "V1ExtractionBatchesCreateResponse415Status",
    "V1ExtractionBatchesCreateResponse415Type",
    "V1ExtractionBatchesCreateResponse422",
    "V1ExtractionBatchesCreateResponse422Status",
    "V1ExtractionBatchesCreateResponse422Type",
    "V1ExtractionBatchesRetrieveResponse400",
    "V1ExtractionBatchesRetrieveResponse400Status",
    "V1ExtractionBatchesRetrieveResponse400Type",
    "V1ExtractionBatchesRetrieveResponse401",
    "V1ExtractionBatchesRetrieveResponse401Status",
    "V1ExtractionBatchesRetrieveResponse401Type",
    "V1ExtractionBatchesRetrieveResponse403",
    "V1ExtractionBatchesRetrieveResponse403Status",
    "V1ExtractionBatchesRetrieveResponse403Type",
    "V1ExtractionBatchesRetrieveResponse404",
    "V1ExtractionBatchesRetrieveResponse404Status",
    "V1ExtractionBatchesRetrieveResponse404Type",
    "V1ExtractionBatchesRetrieveResponse406",
    "V1ExtractionBatchesRetrieveResponse406Status",
    "V1ExtractionBatchesRetrieveResponse406Type",
    "V1ExtractionJobsCancelResponse201",
    "V1ExtractionJobsCancelResponse400",
    "V1ExtractionJobsCancelResponse400Status",
    "V1ExtractionJobsCancelResponse400Type",
    "V1ExtractionJobsCancelResponse401",
    "V1ExtractionJobsCancelResponse401Status",
    "V1ExtractionJobsCancelResponse401Type",
    "V1ExtractionJobsCancelResponse403",
    "V1ExtractionJobsCancelResponse403Status",
    "V1ExtractionJobsCancelResponse403Type",
    "V1ExtractionJobsCancelResponse406",
    "V1ExtractionJobsCancelResponse406Status",
    "V1ExtractionJobsCancelResponse406Type",
    "V1ExtractionJobsCancelResponse413",
    "V1ExtractionJobsCancelResponse413Status",
    "V1ExtractionJobsCancelResponse413Type",
    "V1ExtractionJobsCancelResponse415",
    "V1ExtractionJobsCancelResponse415Status",
    "V1ExtractionJobsCancelResponse415Type",
    "V1ExtractionJobsCancelResponse422",
    "V1ExtractionJobsCancelResponse422Status",
    "V1ExtractionJobsCancelResponse422Type",
    "V1ExtractionJobsCreateResponse202",
    "V1ExtractionJobsCreateResponse400",
    "V1ExtractionJobsCreateResponse400Status",
    "V1ExtractionJobsCreateResponse400Type",
    "V1ExtractionJobsCreateResponse401",
    "V1ExtractionJobsCreateResponse401Status",
    "V1ExtractionJobsCreateResponse401Type",
    "V1ExtractionJobsCreateResponse403",
    "V1ExtractionJobsCreateResponse403Status",
    "V1ExtractionJobsCreateResponse403Type",
    "V1ExtractionJobsCreateResponse406",
    "V1ExtractionJobsCreateResponse406Status",
    "V1ExtractionJobsCreateResponse406Type",
    "V1ExtractionJobsCreateResponse409",
    "V1ExtractionJobsCreateResponse409Status",
    "V1ExtractionJobsCreateResponse409Type",
    "V1ExtractionJobsCreateResponse413",
    "V1ExtractionJobsCreateResponse413Status",
    "V1ExtractionJobsCreateResponse413Type",
    "V1ExtractionJobsCreateResponse415",
    "V1ExtractionJobsCreateResponse415Status",
    "V1ExtractionJobsCreateResponse415Type",
    "V1ExtractionJobsCreateResponse422",
    "V1ExtractionJobsCreateResponse422Status",
    "V1ExtractionJobsCreateResponse422Type",
    "V1ExtractionJobsCreateResponse429",
    "V1ExtractionJobsCreateResponse429Status",
    "V1ExtractionJobsCreateResponse429Type",
    "V1ExtractionJobsCreateResponse503",
    "V1ExtractionJobsCreateResponse503Status",
    "V1ExtractionJobsCreateResponse503Type",
    "V1ExtractionJobsDocumentTextRetrieveResponse200",
    "V1ExtractionJobsDocumentTextRetrieveResponse401",
    "V1ExtractionJobsDocumentTextRetrieveResponse401Status",
    "V1ExtractionJobsDocumentTextRetrieveResponse401Type",
    "V1ExtractionJobsDocumentTextRetrieveResponse403",
    "V1ExtractionJobsDocumentTextRetrieveResponse403Status",
    "V1ExtractionJobsDocumentTextRetrieveResponse403Type",
    "V1ExtractionJobsDocumentTextRetrieveResponse404",
    "V1ExtractionJobsDocumentTextRetrieveResponse404Status",
    "V1ExtractionJobsDocumentTextRetrieveResponse404Type",
    "V1ExtractionJobsDocumentTextRetrieveResponse406",
    "V1ExtractionJobsDocumentTextRetrieveResponse406Status",
    "V1ExtractionJobsDocumentTextRetrieveResponse406Type",
    "V1ExtractionJobsListResponse200",
    "V1ExtractionJobsListResponse400",
    "V1ExtractionJobsListResponse400Status",
    "V1ExtractionJobsListResponse400Type",
    "V1ExtractionJobsListResponse401",
    "V1ExtractionJobsListResponse401Status",
    "V1ExtractionJobsListResponse401Type",
    "V1ExtractionJobsListResponse403",
    "V1ExtractionJobsListResponse403Status",
    "V1ExtractionJobsListResponse403Type",
    "V1ExtractionJobsListResponse404",
    "V1ExtractionJobsListResponse404Status",
    "V1ExtractionJobsListResponse404Type",
    "V1ExtractionJobsListResponse406",
    "V1ExtractionJobsListResponse406Status",
    "V1ExtractionJobsListResponse406Type",
    "V1ExtractionJobsListState",
    "V1ExtractionJobsRerunResponse201",
    "V1ExtractionJobsRerunResponse400",
    "V1ExtractionJobsRerunResponse400Status",
    "V1ExtractionJobsRerunResponse400Type",
    "V1ExtractionJobsRerunResponse401",
    "V1ExtractionJobsRerunResponse401Status",
    "V1ExtractionJobsRerunResponse401Type",
    "V1ExtractionJobsRerunResponse403",
    "V1ExtractionJobsRerunResponse403Status",
    "V1ExtractionJobsRerunResponse403Type",
    "V1ExtractionJobsRerunResponse406",
    "V1ExtractionJobsRerunResponse406Status",
    "V1ExtractionJobsRerunResponse406Type",
    "V1ExtractionJobsRerunResponse413",
    "V1ExtractionJobsRerunResponse413Status",
    "V1ExtractionJobsRerunResponse413Type",
    "V1ExtractionJobsRerunResponse415",
    "V1ExtractionJobsRerunResponse415Status",
    "V1ExtractionJobsRerunResponse415Type",
    "V1ExtractionJobsRerunResponse422",
    "V1ExtractionJobsRerunResponse422Status",
    "V1ExtractionJobsRerunResponse422Type",
    "V1ExtractionJobsRetrieveResponse401",
    "V1ExtractionJobsRetrieveResponse401Status",
    "V1ExtractionJobsRetrieveResponse401Type",
    "V1ExtractionJobsRetrieveResponse403",
    "V1ExtractionJobsRetrieveResponse403Status",
    "V1ExtractionJobsRetrieveResponse403Type",
    "V1ExtractionJobsRetrieveResponse404",
    "V1ExtractionJobsRetrieveResponse404Status",
    "V1ExtractionJobsRetrieveResponse404Type",
    "V1ExtractionJobsRetrieveResponse406",
    "V1ExtractionJobsRetrieveResponse406Status",
    "V1ExtractionJobsRetrieveResponse406Type",
    "V1NotificationTicketsCreateResponse201",
    "V1NotificationTicketsCreateResponse401",
    "V1NotificationTicketsCreateResponse401Status",
    "V1NotificationTicketsCreateResponse401Type",
    "V1NotificationTicketsCreateResponse403",
    "V1NotificationTicketsCreateResponse403Status",
    "V1NotificationTicketsCreateResponse403Type",
    "V1NotificationTicketsCreateResponse406",
    "V1NotificationTicketsCreateResponse406Status",
    "V1NotificationTicketsCreateResponse406Type",
    "V1OperatorActionsListResponse200",
    "V1OperatorActionsListResponse401",
    "V1OperatorActionsListResponse401Status",
    "V1OperatorActionsListResponse401Type",
    "V1OperatorActionsListResponse403",
    "V1OperatorActionsListResponse403Status",
    "V1OperatorActionsListResponse403Type",
    "V1OperatorActionsListResponse406",
    "V1OperatorActionsListResponse406Status",
    "V1OperatorActionsListResponse406Type",
    "V1OperatorActionsRetrieveResponse200",
    "V1OperatorActionsRetrieveResponse401",
    "V1OperatorActionsRetrieveResponse401Status",
    "V1OperatorActionsRetrieveResponse401Type",
    "V1OperatorActionsRetrieveResponse403",
    "V1OperatorActionsRetrieveResponse403Status",
    "V1OperatorActionsRetrieveResponse403Type",
    "V1OperatorActionsRetrieveResponse404",
    "V1OperatorActionsRetrieveResponse404Status",
    "V1OperatorActionsRetrieveResponse404Type",
    "V1OperatorActionsRetrieveResponse406",
    "V1OperatorActionsRetrieveResponse406Status",
    "V1OperatorActionsRetrieveResponse406Type",
    "V1WebhookDeliveriesRedeliverResponse201",
    "V1WebhookDeliveriesRedeliverResponse400",
    "V1WebhookDeliveriesRedeliverResponse400Status",
    "V1WebhookDeliveriesRedeliverResponse400Type",
    "V1WebhookDeliveriesRedeliverResponse401",
    "V1WebhookDeliveriesRedeliverResponse401Status",
    "V1WebhookDeliveriesRedeliverResponse401Type",
    "V1WebhookDeliveriesRedeliverResponse403",
    "V1WebhookDeliveriesRedeliverResponse403Status",
    "V1WebhookDeliveriesRedeliverResponse403Type",
    "V1WebhookDeliveriesRedeliverResponse406",
    "V1WebhookDeliveriesRedeliverResponse406Status",
    "V1WebhookDeliveriesRedeliverResponse406Type",
    "V1WebhookDeliveriesRedeliverResponse413",
    "V1WebhookDeliveriesRedeliverResponse413Status",
    "V1WebhookDeliveriesRedeliverResponse413Type",
    "V1WebhookDeliveriesRedeliverResponse415",
    "V1WebhookDeliveriesRedeliverResponse415Status",
    "V1WebhookDeliveriesRedeliverResponse415Type",
    "V1WebhookEndpointsCreateResponse201",
    "V1WebhookEndpointsCreateResponse400",
    "V1WebhookEndpointsCreateResponse400Status",
    "V1WebhookEndpointsCreateResponse400Type",
    "V1WebhookEndpointsCreateResponse401",
    "V1WebhookEndpointsCreateResponse401Status",
    "V1WebhookEndpointsCreateResponse401Type",
    "V1WebhookEndpointsCreateResponse403",
    "V1WebhookEndpointsCreateResponse403Status",
    "V1WebhookEndpointsCreateResponse403Type",
    "V1WebhookEndpointsCreateResponse406",
    "V1WebhookEndpointsCreateResponse406Status",
    "V1WebhookEndpointsCreateResponse406Type",
    "V1WebhookEndpointsCreateResponse413",
    "V1WebhookEndpointsCreateResponse413Status",
    "V1WebhookEndpointsCreateResponse413Type",
    "V1WebhookEndpointsCreateResponse415",
    "V1WebhookEndpointsCreateResponse415Status",
    "V1WebhookEndpointsCreateResponse415Type",
    "V1WebhookEndpointsCreateResponse422",
    "V1WebhookEndpointsCreateResponse422Status",
    "V1WebhookEndpointsCreateResponse422Type",
    "V1WebhookEndpointsDeliveriesRetrieveResponse200",
    "V1WebhookEndpointsDeliveriesRetrieveResponse400",
    "V1WebhookEndpointsDeliveriesRetrieveResponse400Status",
    "V1WebhookEndpointsDeliveriesRetrieveResponse400Type",
    "V1WebhookEndpointsDeliveriesRetrieveResponse401",
    "V1WebhookEndpointsDeliveriesRetrieveResponse401Status",
    "V1WebhookEndpointsDeliveriesRetrieveResponse401Type",
    "V1WebhookEndpointsDeliveriesRetrieveResponse403",
    "V1WebhookEndpointsDeliveriesRetrieveResponse403Status",
    "V1WebhookEndpointsDeliveriesRetrieveResponse403Type",
    "V1WebhookEndpointsDeliveriesRetrieveResponse404",
    "V1WebhookEndpointsDeliveriesRetrieveResponse404Status",
    "V1WebhookEndpointsDeliveriesRetrieveResponse404Type",
    "V1WebhookEndpointsDeliveriesRetrieveResponse406",
    "V1WebhookEndpointsDeliveriesRetrieveResponse406Status",
    "V1WebhookEndpointsDeliveriesRetrieveResponse406Type",
    "V1WebhookEndpointsDeliveriesRetrieveState",
    "V1WebhookEndpointsDestroyResponse401",
    "V1WebhookEndpointsDestroyResponse401Status",
    "V1WebhookEndpointsDestroyResponse401Type",
    "V1WebhookEndpointsDestroyResponse403",
    "V1WebhookEndpointsDestroyResponse403Status",
    "V1WebhookEndpointsDestroyResponse403Type",
    "V1WebhookEndpointsDestroyResponse404",
    "V1WebhookEndpointsDestroyResponse404Status",
    "V1WebhookEndpointsDestroyResponse404Type",
    "V1WebhookEndpointsDestroyResponse406",
    "V1WebhookEndpointsDestroyResponse406Status",
    "V1WebhookEndpointsDestroyResponse406Type",
    "V1WebhookEndpointsListResponse200",
    "V1WebhookEndpointsListResponse401",
    "V1WebhookEndpointsListResponse401Status",
    "V1WebhookEndpointsListResponse401Type",
    "V1WebhookEndpointsListResponse403",
    "V1WebhookEndpointsListResponse403Status",
    "V1WebhookEndpointsListResponse403Type",
    "V1WebhookEndpointsListResponse406",
    "V1WebhookEndpointsListResponse406Status",
    "V1WebhookEndpointsListResponse406Type",
    "V1WebhookEndpointsRetrieveResponse200",
    "V1WebhookEndpointsRetrieveResponse401",
    "V1WebhookEndpointsRetrieveResponse401Status",
    "V1WebhookEndpointsRetrieveResponse401Type",
    "V1WebhookEndpointsRetrieveResponse403",
    "V1WebhookEndpointsRetrieveResponse403Status",
    "V1WebhookEndpointsRetrieveResponse403Type",
    "V1WebhookEndpointsRetrieveResponse404",
    "V1WebhookEndpointsRetrieveResponse404Status",
    "V1WebhookEndpointsRetrieveResponse404Type",
    "V1WebhookEndpointsRetrieveResponse406",
    "V1WebhookEndpointsRetrieveResponse406Status",
    "V1WebhookEndpointsRetrieveResponse406Type",
    "V1WebhookEndpointsRotateSecretCreateResponse200",
    "V1WebhookEndpointsRotateSecretCreateResponse401",
    "V1WebhookEndpointsRotateSecretCreateResponse401Status",
    "V1WebhookEndpointsRotateSecretCreateResponse401Type",
    "V1WebhookEndpointsRotateSecretCreateResponse403",
    "V1WebhookEndpointsRotateSecretCreateResponse403Status",
    "V1WebhookEndpointsRotateSecretCreateResponse403Type",
    "V1WebhookEndpointsRotateSecretCreateResponse404",
    "V1WebhookEndpointsRotateSecretCreateResponse404Status",
    "V1WebhookEndpointsRotateSecretCreateResponse404Type",
    "V1WebhookEndpointsRotateSecretCreateResponse406",
    "V1WebhookEndpointsRotateSecretCreateResponse406Status",
    "V1WebhookEndpointsRotateSecretCreateResponse406Type",
    "V1WebhookEndpointsVerifyCreateResponse202",
    "V1WebhookEndpointsVerifyCreateResponse401",
    "V1WebhookEndpointsVerifyCreateResponse401Status",
    "V1WebhookEndpointsVerifyCreateResponse401Type",
    "V1WebhookEndpointsVerifyCreateResponse403",
    "V1WebhookEndpointsVerifyCreateResponse403Status",
    "V1WebhookEndpointsVerifyCreateResponse403Type",
    "V1WebhookEndpointsVerifyCreateResponse404",
    "V1WebhookEndpointsVerifyCreateResponse404Status",
    "V1WebhookEndpointsVerifyCreateResponse404Type",
    "V1WebhookEndpointsVerifyCreateResponse406",
    "V1WebhookEndpointsVerifyCreateResponse406Status",
    "V1WebhookEndpointsVerifyCreateResponse406Type",
    "V1WebhookEndpointsVerifyCreateResponse422",
    "V1WebhookEndpointsVerifyCreateResponse422Status",
    "V1WebhookEndpointsVerifyCreateResponse422Type",
    "Validation",
    "ValidationChecksItem",
    "ValidationFields",
    "WebhookEventTypeEnum",
)
