from django.urls import path

from memories.compression import apis as compression_apis
from memories.ltm import apis as ltm_apis
from memories.recall import apis as recall_apis
from memories.review import apis as review_apis
from memories.stm import apis as stm_apis
from memories.write import apis as write_apis

app_name = "memories"
urlpatterns = [
    path("memories/proposals", write_apis.ProposalSubmitApi.as_view(), name="proposals"),
    path("memories/stm", stm_apis.StmListApi.as_view(), name="stm"),
    path("memories/<extid:item_id>", write_apis.MemoryItemApi.as_view(), name="item"),
    path("ltm/cards", ltm_apis.CardListApi.as_view(), name="ltm-cards"),
    path("ltm/cards:import", ltm_apis.CardImportApi.as_view(), name="ltm-import"),
    path("ltm/cards/<extid:memory_id>", review_apis.CardDetailApi.as_view(), name="ltm-card"),
    path("ltm/search", ltm_apis.LtmSearchApi.as_view(), name="ltm-search"),
    path("recall", recall_apis.RecallApi.as_view(), name="recall"),
    path(
        "sessions/<extid:session_id>/compress",
        compression_apis.SessionCompressApi.as_view(),
        name="compress",
    ),
    path("users/<extid:user_id>/forget", review_apis.UserForgetApi.as_view(), name="forget"),
    path(
        "users/<extid:user_id>/memories",
        review_apis.UserMemoriesApi.as_view(),
        name="user-memories",
    ),
    path("users/<extid:user_id>/export", review_apis.UserExportApi.as_view(), name="export"),
    path("facts/<extid:fact_id>", review_apis.FactDeleteApi.as_view(), name="fact"),
    path("deletions/<extid:request_id>", review_apis.DeletionDetailApi.as_view(), name="deletion"),
    path("promotions", review_apis.PromotionListApi.as_view(), name="promotions"),
]
